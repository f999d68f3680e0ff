package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.InvalidJobException;
import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.core.TopicControl;
import io.delayq.core.TopicFlow;
import io.delayq.dev.Resp;
import io.delayq.dispatch.TestObservers;
import io.delayq.ops.DelayqMetrics;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;

/**
 * Pause, resume and rate limits over REST and {@link TopicControl}. "rate-config" has
 * {@code delayq.topics.rate-config.rate-limit=5} and {@code group-rate-limit=2} in the test
 * configuration and no observer.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class TopicControlTest {
    @Inject
    TopicControl control;
    @Inject
    Jobs jobs;
    @Inject
    DelayqMetrics metrics;

    static Response putRate(String topic, String body) {
        return given().contentType(ContentType.JSON).body(body).put("/topics/" + topic + "/rate-limit");
    }

    static String inTopics(String topic, String field) {
        return "find { it.topic == '" + topic + "' }." + field;
    }

    @Test
    void pauseAndResumeAnswerTheTopicsFlowAndGetTopicsShowsIt() {
        String topic = Topics.fresh("pause-rest");
        String pausedAt = given().post("/topics/" + topic + "/pause").then().statusCode(200)
                .body("topic", equalTo(topic)).body("paused", equalTo(true)).body("pausedAt", notNullValue())
                .body("rateLimit", nullValue()).extract().path("pausedAt");
        assertTrue(Instant.parse(pausedAt).isAfter(Instant.now().minusSeconds(60)));
        given().get("/topics").then().statusCode(200).body(inTopics(topic, "paused"), equalTo(true))
                .body(inTopics(topic, "pausedAt"), equalTo(pausedAt)).body(inTopics(topic, "scheduled"), equalTo(0));
        given().post("/topics/" + topic + "/pause").then().statusCode(200).body("pausedAt", equalTo(pausedAt));
        given().post("/topics/" + topic + "/resume").then().statusCode(200).body("paused", equalTo(false))
                .body("pausedAt", nullValue());
        given().get("/topics").then().body(inTopics(topic, "paused"), equalTo(false));
        given().post("/topics/No/pause").then().statusCode(400).body("field", equalTo("topic"));
    }

    /**
     * The in-process replica serves "rec": while it is paused a due job waits (and its taker does
     * not poll Redis for it), and a resume runs it at once.
     */
    @Test
    void aPausedServedTopicHoldsItsDueJobsWithoutPollingAndResumeRunsThemAtOnce() {
        String id = Topics.fresh("held").replace('-', '_');
        try (Resp redis = RedisTestResource.resp()) {
            control.pause("rec");
            try {
                jobs.schedule(JobRequest.topic("rec").id(id).delay(Duration.ZERO));
                long takes = metrics.takeTimer("rec").count();
                Awaitility.await().during(Duration.ofMillis(2500)).atMost(Duration.ofSeconds(4))
                        .until(() -> !TestObservers.RECORDED.containsKey(id));
                assertEquals("scheduled", given().get("/jobs/rec/" + id).then().extract().path("state"));
                assertTrue(redis.str("GET", Topics.keys("rec") + "paused") != null, "the pause is in Redis");
                long during = metrics.takeTimer("rec").count() - takes;
                assertTrue(during <= 2, during + " takes in 2.5 s while paused: the taker sleeps");
            } finally {
                control.resume("rec");
            }
            long resumed = System.nanoTime();
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> TestObservers.RECORDED.containsKey(id));
            long ms = (System.nanoTime() - resumed) / 1_000_000;
            assertTrue(ms < 500, "ran " + ms + " ms after the resume: the resume woke the taker");
        }
    }

    @Test
    void aRateLimitSetOverRestWinsOverTheConfigurationsUntilDeleted() {
        String topic = "rate-config";
        given().delete("/topics/" + topic + "/rate-limit").then().statusCode(200)
                .body("rateLimit.perSecond", equalTo(5.0f)).body("rateLimit.source", equalTo("config"));
        putRate(topic, "{\"perSecond\": 50}").then().statusCode(200).body("topic", equalTo(topic))
                .body("paused", equalTo(false)).body("rateLimit.perSecond", equalTo(50.0f))
                .body("rateLimit.source", equalTo("api"));
        given().get("/topics").then().body(inTopics(topic, "rateLimit.perSecond"), equalTo(50.0f))
                .body(inTopics(topic, "rateLimit.source"), equalTo("api"));
        assertEquals(new TopicFlow.RateLimit(50, TopicFlow.Source.API), control.flow(topic).rateLimit());
        given().delete("/topics/" + topic + "/rate-limit").then().statusCode(200)
                .body("rateLimit.perSecond", equalTo(5.0f)).body("rateLimit.source", equalTo("config"));
        assertEquals(new TopicFlow.RateLimit(5, TopicFlow.Source.CONFIG), control.flow(topic).rateLimit());

        String fresh = Topics.fresh("rate-rest");
        TopicFlow set = control.setRateLimit(fresh, 0.5);
        assertEquals(0.5, set.rateLimit().perSecond());
        assertNull(control.clearRateLimit(fresh).rateLimit(), "no configuration: no limit");
        given().get("/topics").then().body(inTopics(fresh, "rateLimit"), nullValue());
    }

    static Response putGroupRate(String topic, String body) {
        return given().contentType(ContentType.JSON).body(body).put("/topics/" + topic + "/group-rate-limit");
    }

    @Test
    void aGroupRateLimitSetOverRestWinsOverTheConfigurationsUntilDeleted() {
        String topic = "rate-config";
        given().delete("/topics/" + topic + "/group-rate-limit").then().statusCode(200)
                .body("groupRateLimit.perSecond", equalTo(2.0f)).body("groupRateLimit.source", equalTo("config"))
                .body("rateLimit.perSecond", equalTo(5.0f));
        putGroupRate(topic, "{\"perSecond\": 0.5}").then().statusCode(200).body("topic", equalTo(topic))
                .body("groupRateLimit.perSecond", equalTo(0.5f)).body("groupRateLimit.source", equalTo("api"))
                .body("rateLimit.perSecond", equalTo(5.0f));
        given().get("/topics").then().body(inTopics(topic, "groupRateLimit.perSecond"), equalTo(0.5f))
                .body(inTopics(topic, "groupRateLimit.source"), equalTo("api"));
        assertEquals(new TopicFlow.RateLimit(0.5, TopicFlow.Source.API), control.flow(topic).groupRateLimit());
        given().delete("/topics/" + topic + "/group-rate-limit").then().statusCode(200)
                .body("groupRateLimit.perSecond", equalTo(2.0f)).body("groupRateLimit.source", equalTo("config"));

        String fresh = Topics.fresh("grate-rest");
        assertEquals(3.0, control.setGroupRateLimit(fresh, 3).groupRateLimit().perSecond());
        assertEquals(3.0, control.setRateLimit(fresh, 7).groupRateLimit().perSecond(), "the topic's own limit is apart");
        assertNull(control.clearGroupRateLimit(fresh).groupRateLimit(), "no configuration: no limit");
        assertEquals(7.0, control.flow(fresh).rateLimit().perSecond());
        control.clearRateLimit(fresh);
        given().get("/topics").then().body(inTopics(fresh, "groupRateLimit"), nullValue());
    }

    @Test
    void aBadGroupRateLimitIs400NamingTheFieldAndWritesNothing() {
        String topic = Topics.fresh("grate-rules");
        for (String[] c : BAD_RATES) {
            putGroupRate(topic, c[0]).then().statusCode(400).contentType("application/problem+json")
                    .body("field", equalTo(c[1]));
        }
        putGroupRate("No", "{\"perSecond\":5}").then().statusCode(400).body("field", equalTo("topic"));
        assertNull(control.flow(topic).groupRateLimit(), "nothing was set");
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> control.setGroupRateLimit(topic, 0));
        assertEquals("perSecond", e.field());
    }

    /**
     * The in-process replica serves "rec" (jobs without a group there are not limited): a group's
     * jobs put off by its limit are started at their turns by the replica's own taker, woken by
     * the partition's "next" as for any scheduled job, while another group's job runs at once.
     */
    @Test
    void aServedGroupsJobsPutOffByItsLimitRunAtTheirTurnsAndAnotherGroupsAtOnce() {
        String group = Topics.fresh("g").replace('-', '_');
        String other = group + "_other";
        control.setGroupRateLimit("rec", 2);
        try (Resp redis = RedisTestResource.resp()) {
            // The turns count from the first job's take, which comes after this (Redis time): job i
            // never runs before (i - 1) turns of 500 ms from here, however late job 1 itself ran.
            List<Object> time = redis.list("TIME");
            long enqueuedAt = Long.parseLong(time.get(0).toString()) * 1000 + Long.parseLong(time.get(1).toString()) / 1000;
            for (int i = 1; i <= 4; i++) {
                jobs.schedule(JobRequest.topic("rec").id(group + "_" + i).group(group).delay(Duration.ZERO));
            }
            jobs.schedule(JobRequest.topic("rec").id(other).group(other).delay(Duration.ZERO));
            Awaitility.await().atMost(Duration.ofSeconds(30))
                    .until(() -> TestObservers.RECORDED.containsKey(group + "_4") && TestObservers.RECORDED.containsKey(other));
            for (int i = 2; i <= 4; i++) {
                long at = TestObservers.RECORDED.get(group + "_" + i).get(0).redisMs() - enqueuedAt;
                assertTrue(at >= (i - 1) * 500L - 20, group + "_" + i + " ran " + at + " ms after the enqueue, at 2/s");
                assertEquals(1, TestObservers.RECORDED.get(group + "_" + i).size(), "once");
            }
            long lastAt = TestObservers.RECORDED.get(group + "_4").get(0).redisMs();
            long otherAt = TestObservers.RECORDED.get(other).get(0).redisMs();
            assertTrue(otherAt < lastAt, "the other group's job did not wait for the busy group's turns: ran "
                    + (otherAt - enqueuedAt) + " ms after the enqueue, the busy group's last " + (lastAt - enqueuedAt));
        } finally {
            control.clearGroupRateLimit("rec");
        }
    }

    /** Bodies a rate limit (the topic's, or per group) refuses, with the field the 400 names. */
    private static final String[][] BAD_RATES = {
            { "{}", "perSecond" },
            { "{\"perSecond\":null}", "perSecond" },
            { "{\"perSecond\":0}", "perSecond" },
            { "{\"perSecond\":-5}", "perSecond" },
            { "{\"perSecond\":\"50\"}", "perSecond" },
            { "{\"perSecond\":2000000}", "perSecond" },
            { "{\"perSecond\":5,\"burst\":2}", "burst" },
            { "[50]", "body" },
            { "{\"perSecond\":", "body" },
    };

    @Test
    void aBadRateLimitIs400NamingTheField() {
        String topic = Topics.fresh("rate-rules");
        for (String[] c : BAD_RATES) {
            putRate(topic, c[0]).then().statusCode(400).contentType("application/problem+json")
                    .body("field", equalTo(c[1]));
        }
        putRate("No", "{\"perSecond\":5}").then().statusCode(400).body("field", equalTo("topic"));
        assertNull(control.flow(topic).rateLimit(), "nothing was set");
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> control.setRateLimit(topic, Double.NaN));
        assertEquals("perSecond", e.field());
    }
}
