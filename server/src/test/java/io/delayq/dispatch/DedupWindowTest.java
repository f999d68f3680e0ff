package io.delayq.dispatch;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.store.Inspection;
import io.delayq.support.RedisTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/**
 * The dedup window: topic "dedup" remembers succeeded ids for an hour, "dedup-short" for 2 s,
 * "rec" not at all (see the test properties).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DedupWindowTest {
    @Inject
    Jobs jobs;
    @Inject
    Inspection store;

    private static int deliveries(String id) {
        return TestObservers.DEDUP.getOrDefault(id, List.of()).size();
    }

    private JobInfo succeededOnceRun(String topic, String id) {
        Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                .until(() -> store.get(topic, id).map(j -> j.state() == JobState.SUCCEEDED).orElse(false));
        return store.get(topic, id).orElseThrow();
    }

    private static String body(String topic, String id) {
        return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"payload\":{\"n\":1}}";
    }

    @Test
    void anIdThatSucceededWithinTheWindowIsAnsweredSucceededAndNotRunAgain() {
        String id = DispatchTest.uid("dd");
        String later = DispatchTest.uid("dd-later");
        given().contentType(ContentType.JSON).body(body("dedup", id)).post("/jobs").then().statusCode(201)
                .body("state", equalTo("scheduled"));
        JobInfo done = succeededOnceRun("dedup", id);
        assertEquals(1, deliveries(id));
        assertNull(done.runAt(), "a succeeded job has no runAt");
        Instant finished = done.finishedAt();
        assertTrue(finished != null && !finished.isAfter(Instant.now().plusSeconds(5)), "finishedAt: " + finished);

        // Every way of enqueueing the id again answers succeeded, with when, and schedules nothing.
        given().contentType(ContentType.JSON).body(body("dedup", id)).post("/jobs").then().statusCode(200)
                .body("state", equalTo("succeeded")).body("finishedAt", equalTo(finished.toString()))
                .body("runAt", nullValue());
        given().contentType(ContentType.JSON).body("[" + body("dedup", id) + "," + body("dedup", later) + "]")
                .post("/jobs/batch").then().statusCode(200)
                .body("[0].status", equalTo(200)).body("[0].state", equalTo("succeeded"))
                .body("[0].finishedAt", equalTo(finished.toString()))
                .body("[1].status", equalTo(201)).body("[1].state", equalTo("scheduled"));
        JobInfo again = jobs.schedule(JobRequest.topic("dedup").id(id).payload(1));
        assertEquals(JobState.SUCCEEDED, again.state());
        assertEquals(finished, again.finishedAt());
        assertTrue(!again.created());

        given().get("/jobs/dedup/" + id).then().statusCode(200).body("state", equalTo("succeeded"))
                .body("finishedAt", equalTo(finished.toString())).body("runAt", nullValue());
        given().delete("/jobs/dedup/" + id).then().statusCode(404);

        // The job enqueued with the re-enqueues, due as they would have been, ran; the id did not.
        succeededOnceRun("dedup", later);
        assertEquals(1, deliveries(later));
        assertEquals(1, deliveries(id), "the observer ran once in all");
        assertEquals(JobState.SUCCEEDED, store.get("dedup", id).orElseThrow().state(), "still remembered");
        given().get("/topics").then().statusCode(200)
                .body("find { it.topic == 'dedup' }.scheduled", equalTo(0))
                .body("find { it.topic == 'dedup' }.inflight", equalTo(0));
        assertEquals(0, store.gauges("dedup")[0], "a succeeded job is not scheduled in the gauges");
    }

    @Test
    void pastTheWindowTheIdIsFreeAndAnEnqueueRunsItAgain() {
        String id = DispatchTest.uid("dd-short");
        given().contentType(ContentType.JSON).body(body("dedup-short", id)).post("/jobs").then().statusCode(201);
        JobInfo done = succeededOnceRun("dedup-short", id);
        given().contentType(ContentType.JSON).body(body("dedup-short", id)).post("/jobs").then().statusCode(200)
                .body("state", equalTo("succeeded"));

        // Then the window (2 s) passes, by Redis time: the id is unknown and free again.
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> store.get("dedup-short", id).isEmpty());
        long sinceSuccess = TestObservers.redisTime() - done.finishedAt().toEpochMilli();
        assertTrue(sinceSuccess >= 2000, "forgotten " + sinceSuccess + " ms after its success; the window is 2 s");
        given().contentType(ContentType.JSON).body(body("dedup-short", id)).post("/jobs").then().statusCode(201)
                .body("state", equalTo("scheduled")).body("runAt", notNullValue());
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> deliveries(id) == 2);
        succeededOnceRun("dedup-short", id);
        assertEquals(2, deliveries(id));
    }

    @Test
    void onlyATopicWithAWindowRemembersItsSucceededIds() {
        String id = DispatchTest.uid("dd-both");
        jobs.schedule(JobRequest.topic("rec").id(id).payload(1));
        jobs.schedule(JobRequest.topic("dedup").id(id).payload(1));
        succeededOnceRun("dedup", id);
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> TestObservers.RECORDED.getOrDefault(id, List.of()).size() == 1
                        && store.get("rec", id).isEmpty());

        assertTrue(jobs.schedule(JobRequest.topic("rec").id(id).payload(1)).created(), "no window: free at once");
        assertEquals(JobState.SUCCEEDED, jobs.schedule(JobRequest.topic("dedup").id(id).payload(1)).state());
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> TestObservers.RECORDED.get(id).size() == 2 && store.get("rec", id).isEmpty());
        assertEquals(1, deliveries(id));
    }
}
