package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import jakarta.inject.Inject;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.delayq.core.ForgetResult;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.core.TopicControl;
import io.delayq.dev.Resp;
import io.delayq.store.ScheduleStore;
import io.delayq.store.TopicAdmin;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/**
 * {@code DELETE /topics/{topic}} and {@link TopicControl#forget}. "rec" is served by a test
 * observer; "forget-cfg" is configured (so this replica remembers it listed) and served by none.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class ForgetTopicTest {
    @Inject
    ScheduleStore store;
    @Inject
    TopicAdmin topicAdmin;
    @Inject
    Jobs jobs;
    @Inject
    TopicControl control;

    @AfterEach
    void noProbe() {
        topicAdmin.forgetProbe(null);
    }

    private static void enqueue(String topic, String id) {
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"delayMs\":3600000}")
                .post("/jobs").then().statusCode(201);
    }

    private static boolean listed(Resp redis, String topic) {
        return redis.num("SISMEMBER", "dq:topics", topic) == 1;
    }

    @Test
    void aTopicWithNoJobsIsForgottenWithEverythingItsPartitionsKept() {
        String topic = Topics.fresh("forget");
        given().post("/topics/" + topic + "/pause").then().statusCode(200);
        given().contentType(ContentType.JSON).body("{\"perSecond\":5}").put("/topics/" + topic + "/rate-limit").then()
                .statusCode(200);
        enqueue(topic, "a");
        given().delete("/jobs/" + topic + "/a").then().statusCode(204);
        store.fenceTicks("some-schedule", topic, System.currentTimeMillis());
        String k = Topics.keys(topic);
        try (Resp redis = RedisTestResource.resp()) {
            assertTrue(redis.num("EXISTS", k + "paused", k + "ratelimit", k + "ticks") == 3, "state to forget");
            given().get("/topics").then().body("topic", hasItem(topic));

            given().delete("/topics/" + topic).then().statusCode(204);

            assertEquals(List.of(k + "forgotten"), redis.list("KEYS", "dq:{" + topic + "#*"),
                    "only the mark that lists the topic again on its next job is left (and it expires)");
            assertTrue(redis.num("PTTL", k + "forgotten") > 0);
            assertTrue(!listed(redis, topic));
            assertEquals(0L, redis.num("HEXISTS", "dq:topics:active", topic));
        }
        given().get("/topics").then().body("topic", not(hasItem(topic)));
        given().delete("/topics/" + topic).then().statusCode(404).contentType(startsWith("application/problem+json"))
                .body("detail", containsString(topic));

        // A new job lists it again, and it starts afresh: not paused.
        enqueue(topic, "b");
        given().get("/topics").then().body("find { it.topic == '" + topic + "' }.paused", equalTo(false))
                .body("find { it.topic == '" + topic + "' }.scheduled", equalTo(1));
    }

    @Test
    void aTopicWithJobsScheduledOrDeadIsNotForgotten() {
        String topic = Topics.fresh("forget-busy");
        enqueue(topic, "a");
        given().delete("/topics/" + topic).then().statusCode(409).contentType(startsWith("application/problem+json"))
                .body("status", equalTo(409)).body("detail", containsString("1 scheduled"));
        given().delete("/jobs/" + topic + "/a").then().statusCode(204);
        String k = Topics.keys(topic);
        try (Resp redis = RedisTestResource.resp()) {
            long now = System.currentTimeMillis();
            redis.str("HSET", k + "jobs", "d", Long.toString(now, 36) + ",1,1,boom\n{}");
            redis.num("ZADD", k + "dead", Long.toString(now), "d");
            given().delete("/topics/" + topic).then().statusCode(409).body("detail", containsString("1 dead"));
            assertTrue(listed(redis, topic));
            assertEquals(1L, redis.num("HLEN", k + "jobs"));
        }
        given().delete("/topics/" + topic + "/dead/d").then().statusCode(204);
        given().delete("/topics/" + topic).then().statusCode(204);
    }

    @Test
    void aServedTopicIsNotForgottenAndAnUnknownOneIsNotFound() {
        given().delete("/topics/rec").then().statusCode(409).body("detail", containsString("served by replica"));
        assertEquals(ForgetResult.Outcome.SERVED, control.forget("rec").outcome());
        given().delete("/topics/" + Topics.fresh("never")).then().statusCode(404);
        given().delete("/topics/Bad").then().statusCode(400).body("field", equalTo("topic"));
    }

    /** An enqueue between the steps of a forget, on a topic this replica remembers listed and on one it does not. */
    @Test
    void aJobEnqueuedWhileItsTopicIsForgottenIsStoredAndItsTopicStaysKnown() {
        for (String step : List.of("marked", "unlisted", "cleared")) {
            enqueuedDuringForget(Topics.fresh("forget-race"), step);
            // Remembered listed by this replica: its enqueue sends no SADD; once "cleared", only the
            // partition's mark has the topic listed again.
            jobs.cancel("forget-cfg", jobs.schedule(JobRequest.topic("forget-cfg").delay(Duration.ofHours(1))).id());
            enqueuedDuringForget("forget-cfg", step);
        }
    }

    private void enqueuedDuringForget(String topic, String step) {
        if (!"forget-cfg".equals(topic)) {
            enqueue(topic, "first");
            given().delete("/jobs/" + topic + "/first").then().statusCode(204);
        }
        String id = Topics.fresh("late");
        AtomicReference<JobInfo> late = new AtomicReference<>();
        topicAdmin.forgetProbe(s -> {
            if (s.equals(step)) {
                late.set(jobs.schedule(JobRequest.topic(topic).id(id).delay(Duration.ofHours(1))));
            }
        });
        ForgetResult r = control.forget(topic);
        topicAdmin.forgetProbe(null);
        assertTrue(late.get().created(), "enqueued " + step);
        // Before the clear the forget sees the job and gives up; after it, the topic was forgotten and is back.
        assertEquals(step.equals("cleared") ? ForgetResult.Outcome.FORGOTTEN : ForgetResult.Outcome.HAS_JOBS,
                r.outcome(), step + ": " + r);
        given().get("/jobs/" + topic + "/" + id).then().statusCode(200).body("state", equalTo("scheduled"));
        try (Resp redis = RedisTestResource.resp()) {
            assertTrue(listed(redis, topic), topic + " listed after an enqueue once " + step);
        }
        given().get("/topics").then().body("find { it.topic == '" + topic + "' }.scheduled", equalTo(1));
        jobs.cancel(topic, id);
    }

    @Test
    void enqueuesRacingWithForgetsAreNeverLost() throws Exception {
        for (int i = 0; i < 20; i++) {
            String topic = Topics.fresh("forget-concurrent");
            enqueue(topic, "seed");
            given().delete("/jobs/" + topic + "/seed").then().statusCode(204);
            Thread forget = Thread.ofVirtual().start(() -> given().delete("/topics/" + topic));
            enqueue(topic, "j");
            forget.join();
            given().get("/jobs/" + topic + "/j").then().statusCode(200);
            try (Resp redis = RedisTestResource.resp()) {
                assertTrue(listed(redis, topic), "round " + i);
            }
        }
    }
}
