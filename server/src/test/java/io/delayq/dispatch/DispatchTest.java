package io.delayq.dispatch;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.dev.Resp;
import io.delayq.dispatch.TestObservers.Delivery;
import io.delayq.store.Inspection;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DispatchTest {
    @Inject
    Jobs jobs;
    @Inject
    Inspection store;

    static String uid(String what) {
        return Topics.fresh(what).replace('-', '_');
    }

    @Test
    void jobDueIn300msIsObservedOnceAfterItsRunAtAndNotBefore() {
        String id = uid("soon");
        Instant runAt = jobs.schedule(JobRequest.topic("rec").id(id).payload(Map.of("n", 1)).delay(Duration.ofMillis(300)))
                .runAt();
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> TestObservers.RECORDED.containsKey(id));
        // Let a duplicate, if any, show up: the ack must have removed the job.
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> store.get("rec", id).isEmpty());
        List<Delivery> seen = TestObservers.RECORDED.get(id);
        assertEquals(1, seen.size(), "delivered once");
        Delivery d = seen.get(0);
        assertTrue(d.redisMs() >= runAt.toEpochMilli(), "observed at " + d.redisMs() + " before runAt " + runAt.toEpochMilli());
        assertTrue(d.redisMs() - runAt.toEpochMilli() < 1000, "observed " + (d.redisMs() - runAt.toEpochMilli()) + " ms late");
        assertEquals(1, d.attempt());
        assertEquals("{\"n\":1}", d.payload());
    }

    @Test
    void thousandJobsWithSpreadDueTimesAreEachObservedExactlyOnce() {
        String prefix = uid("spread");
        List<io.delayq.core.NewJob> batch = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            batch.add(new io.delayq.core.NewJob("rec", prefix + "_" + i, true, 200 + (i * 1800L) / 1000, 0, "\"" + i + "\""));
        }
        List<io.delayq.core.JobInfo> infos = jobs.scheduleAll(batch);
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> infos.stream()
                .allMatch(i -> TestObservers.RECORDED.containsKey(i.id())));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> infos.stream()
                .allMatch(i -> store.get("rec", i.id()).isEmpty()));
        for (io.delayq.core.JobInfo info : infos) {
            List<Delivery> seen = TestObservers.RECORDED.get(info.id());
            assertEquals(1, seen.size(), info.id() + " delivered " + seen.size() + " times");
            assertTrue(seen.get(0).redisMs() >= info.runAt().toEpochMilli(), info.id() + " observed before its runAt");
        }
    }

    @Test
    void failingObserverIsRetriedWithGrowingDelaysThenDiesWithTheErrorAndCanBeRequeuedOrPurged() {
        TestObservers.FLAKY_SUCCEEDS.set(false);
        String id = uid("flaky");
        String other = uid("flaky");
        jobs.schedule(JobRequest.topic("flaky").id(id).maxAttempts(3));
        jobs.schedule(JobRequest.topic("flaky").id(other).maxAttempts(1));
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> store.get("flaky", id).map(j -> j.state() == JobState.DEAD).orElse(false));
        List<Delivery> attempts = TestObservers.FLAKY.get(id);
        assertEquals(3, attempts.size());
        assertEquals(List.of(1, 2, 3), attempts.stream().map(Delivery::attempt).toList());
        long gap1 = attempts.get(1).redisMs() - attempts.get(0).redisMs();
        long gap2 = attempts.get(2).redisMs() - attempts.get(1).redisMs();
        // retry.initial=100ms, multiplier 2, jitter 0.2: gaps ~[80,100] then ~[160,200] ms, plus dispatch time
        assertTrue(gap1 >= 80, "first retry after " + gap1 + " ms");
        assertTrue(gap2 >= 160 && gap2 > gap1, "second retry after " + gap2 + " ms (first " + gap1 + ")");

        given().get("/jobs/flaky/" + id).then().statusCode(200).body("state", equalTo("dead")).body("attempts", equalTo(3))
                .body("lastError", containsString("java.lang.IllegalStateException: flaky failure on attempt 3"));
        given().get("/topics/flaky/dead?limit=1000").then().statusCode(200)
                .body("find { it.id == '" + id + "' }.lastError", containsString("IllegalStateException"));

        TestObservers.FLAKY_SUCCEEDS.set(true);
        given().post("/topics/flaky/dead/" + id + "/requeue").then().statusCode(200).body("state", equalTo("scheduled"))
                .body("attempts", equalTo(0));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> store.get("flaky", id).isEmpty());
        assertEquals(4, TestObservers.FLAKY.get(id).size());
        assertEquals(1, TestObservers.FLAKY.get(id).get(3).attempt(), "attempts were reset");

        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> store.get("flaky", other).map(j -> j.state() == JobState.DEAD).orElse(false));
        given().delete("/topics/flaky/dead/" + other).then().statusCode(204);
        given().get("/jobs/flaky/" + other).then().statusCode(404);
        given().delete("/topics/flaky/dead/" + other).then().statusCode(404);
        given().post("/topics/flaky/dead/" + other + "/requeue").then().statusCode(404);
    }

    @Test
    void asyncObserversCompleteThroughTheirStage() {
        String ok = uid("async");
        String bad = uid("async");
        jobs.schedule(JobRequest.topic("async").id(ok).payload(Map.of("x", 1)));
        jobs.schedule(JobRequest.topic("async").id(bad).payload(Map.of("fail", true)).maxAttempts(1));
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> store.get("async", ok).isEmpty());
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> store.get("async", bad).map(j -> j.state() == JobState.DEAD).orElse(false));
        assertEquals(1, TestObservers.ASYNC.get(ok).size());
        assertTrue(store.get("async", bad).orElseThrow().lastError().contains("async failure"));
    }

    @Test
    void jobsOfATopicWithoutObserverAreNotTaken() {
        String topic = Topics.fresh("unserved");
        jobs.schedule(JobRequest.topic(topic).id("u1"));
        // A safety-net poll and more go by: the job must stay scheduled, untouched.
        Awaitility.await().during(Duration.ofMillis(2500)).atMost(Duration.ofSeconds(4))
                .until(() -> store.get(topic, "u1").map(j -> j.state() == JobState.SCHEDULED && j.attempts() == 0)
                        .orElse(false));
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.num("ZCARD", Topics.keys(topic) + "inflight"));
        }
        given().get("/topics").then().statusCode(200)
                .body("find { it.topic == '" + topic + "' }.served", equalTo(false))
                .body("find { it.topic == 'rec' }.served", equalTo(true))
                .body("find { it.topic == '" + topic + "' }.scheduled", equalTo(1));
    }
}
