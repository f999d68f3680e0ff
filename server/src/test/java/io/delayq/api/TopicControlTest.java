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
 * {@code delayq.topics.rate-config.rate-limit=5} in the test configuration and no observer.
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

    @Test
    void aBadRateLimitIs400NamingTheField() {
        String topic = Topics.fresh("rate-rules");
        String[][] cases = {
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
        for (String[] c : cases) {
            putRate(topic, c[0]).then().statusCode(400).contentType("application/problem+json")
                    .body("field", equalTo(c[1]));
        }
        putRate("No", "{\"perSecond\":5}").then().statusCode(400).body("field", equalTo("topic"));
        assertNull(control.flow(topic).rateLimit(), "nothing was set");
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> control.setRateLimit(topic, Double.NaN));
        assertEquals("perSecond", e.field());
    }
}
