package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.path.json.JsonPath;

/**
 * A 503 of an enqueue that may have written jobs names them, each with its outcome, so that a
 * retry with the same ids duplicates nothing. Redis is made to fail at a chosen point of a batch
 * (the store's seam runs just before a partition's script is sent): paused for writes past the
 * Redis timeout (the script runs later: unknown) or out of memory (refused: not stored).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class UnavailableEnqueueTest {
    @Inject
    JobQueue store;

    @AfterEach
    void restore() {
        store.beforeEnqueueScript(null);
        try (Resp redis = RedisTestResource.resp()) {
            redis.call("CLIENT", "UNPAUSE");
            redis.call("CONFIG", "SET", "maxmemory", "0");
        }
    }

    /** Runs {@code redisCommand} once, just before the script of the first partition of {@code topic}. */
    private void onceBefore(String topic, Object... redisCommand) {
        AtomicBoolean done = new AtomicBoolean();
        Consumer<Partition> hook = p -> {
            if (p.topic().equals(topic) && done.compareAndSet(false, true)) {
                try (Resp redis = RedisTestResource.resp()) {
                    redis.call(redisCommand);
                }
            }
        };
        store.beforeEnqueueScript(hook);
    }

    private static String job(String topic, String id) {
        return "{\"topic\":\"" + topic + "\"" + (id == null ? "" : ",\"id\":\"" + id + "\"") + ",\"delayMs\":600000}";
    }

    private static JsonPath unavailable(io.restassured.response.Response r) {
        return r.then().statusCode(503).header("Retry-After", "1").contentType(startsWith("application/problem+json"))
                .body("status", equalTo(503)).extract().jsonPath();
    }

    /** A 503 of a full Redis: says so, and asks for a later retry than a passing outage does. */
    private static JsonPath full(io.restassured.response.Response r) {
        return r.then().statusCode(503).header("Retry-After", "10").contentType(startsWith("application/problem+json"))
                .body("status", equalTo(503)).body("detail", startsWith("Redis is full")).extract().jsonPath();
    }

    private static long jobsIn(String topic) {
        try (Resp redis = RedisTestResource.resp()) {
            return redis.num("HLEN", Topics.keys(topic) + "jobs");
        }
    }

    @Test
    void aBatchThatTimesOutPartWayNamesEveryItemWithItsOutcomeAndItsRetryDuplicatesNothing() {
        String t1 = Topics.fresh("part-a");
        String t2 = Topics.fresh("part-b");
        String t3 = Topics.fresh("part-c");
        // Partitions in order of first appearance: t1 (a, c) is written, t2's script is held by
        // the pause beyond the 5 s Redis timeout (it runs when the pause ends), t3 is never sent.
        onceBefore(t2, "CLIENT", "PAUSE", "15000", "WRITE");
        String batch = "[" + job(t1, "a") + "," + job(t2, "b") + "," + job(t1, "c") + "," + job(t3, null) + "]";
        JsonPath problem = unavailable(given().contentType(ContentType.JSON).body(batch).post("/jobs/batch"));
        List<String> generated = problem.getList("jobs.id");
        assertEquals(4, generated.size(), problem.prettify());
        assertEquals(List.of("a", "b", "c"), generated.subList(0, 3));
        assertTrue(generated.get(3).matches("[A-Za-z0-9]{16}"), "the generated id: " + generated);
        assertEquals(List.of(t1, t2, t1, t3), problem.getList("jobs.topic"));
        assertEquals(List.of("stored", "unknown", "stored", "not stored"), problem.getList("jobs.outcome"));
        assertEquals(2, jobsIn(t1));
        assertEquals(0, jobsIn(t3), "not stored is not stored");

        try (Resp redis = RedisTestResource.resp()) {
            redis.call("CLIENT", "UNPAUSE");
        }
        // "unknown" was the truth: the held script ran once Redis took writes again.
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> jobsIn(t2) == 1);
        String retry = "[" + job(t1, "a") + "," + job(t2, "b") + "," + job(t1, "c") + "," + job(t3, generated.get(3)) + "]";
        given().contentType(ContentType.JSON).body(retry).post("/jobs/batch").then().statusCode(200)
                .body("status", equalTo(List.of(200, 200, 200, 201)));
        assertEquals(List.of(2L, 1L, 1L), List.of(jobsIn(t1), jobsIn(t2), jobsIn(t3)), "no job twice");
    }

    @Test
    void aBatchRefusedPartWayNamesTheRefusedItemsNotStored() {
        String t1 = Topics.fresh("oom-a");
        String t2 = Topics.fresh("oom-b");
        String t3 = Topics.fresh("oom-c");
        onceBefore(t2, "CONFIG", "SET", "maxmemory", "1"); // every write refused: OOM
        String batch = "[" + job(t1, "a") + "," + job(t2, "b") + "," + job(t3, "d") + "]";
        JsonPath problem = full(given().contentType(ContentType.JSON).body(batch).post("/jobs/batch"));
        assertEquals(List.of("a", "b", "d"), problem.getList("jobs.id"));
        assertEquals(List.of("stored", "not stored", "not stored"), problem.getList("jobs.outcome"));
        try (Resp redis = RedisTestResource.resp()) {
            redis.call("CONFIG", "SET", "maxmemory", "0");
        }
        assertEquals(List.of(1L, 0L, 0L), List.of(jobsIn(t1), jobsIn(t2), jobsIn(t3)));
    }

    @Test
    void aSingleJobWhoseReplyTimesOutIsNamedWithItsGeneratedIdAndItsRetryDuplicatesNothing() {
        String topic = Topics.fresh("timeout");
        onceBefore(topic, "CLIENT", "PAUSE", "15000", "WRITE");
        JsonPath problem = unavailable(given().contentType(ContentType.JSON).body(job(topic, null)).post("/jobs"));
        String id = problem.getString("id");
        assertTrue(id != null && id.matches("[A-Za-z0-9]{16}"), problem.prettify());
        assertEquals(List.of(id), problem.getList("jobs.id"));
        assertEquals(List.of("unknown"), problem.getList("jobs.outcome"));

        try (Resp redis = RedisTestResource.resp()) {
            redis.call("CLIENT", "UNPAUSE");
        }
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> jobsIn(topic) == 1);
        given().contentType(ContentType.JSON).body(job(topic, id)).post("/jobs").then().statusCode(200)
                .body("id", equalTo(id));
        assertEquals(1, jobsIn(topic), "the retry found the job the 503 named");
    }
}
