package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.core.ReactiveJobs;
import io.delayq.dev.Resp;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;

/** "ifExists" on POST /jobs, POST /jobs/batch and the Java API: the replies and the rules. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class IfExistsTest {
    @Inject
    Jobs jobs;
    @Inject
    ReactiveJobs reactive;
    @Inject
    JobQueue store;

    static Response post(String path, String body) {
        return given().contentType(ContentType.JSON).body(body).post(path);
    }

    private static String job(String topic, String id, Instant runAt, String payload, String ifExists) {
        return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"runAt\":\"" + runAt + "\",\"payload\":" + payload
                + (ifExists == null ? "" : ",\"ifExists\":\"" + ifExists + "\"") + "}";
    }

    @Test
    void replaceAndExtendAnswerTwoHundredWithReplacedAndKeepStaysAsItWas() {
        String topic = Topics.fresh("ifx-api");
        Instant t = Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.MILLIS);
        post("/jobs", job(topic, "j", t, "1", null)).then().statusCode(201).body("replaced", nullValue());
        post("/jobs", job(topic, "j", t.plusSeconds(60), "2", "keep")).then().statusCode(200)
                .body("runAt", equalTo(t.toString())).body("replaced", nullValue());
        post("/jobs", job(topic, "j", t.minusSeconds(60), "3", "replace")).then().statusCode(200)
                .body("runAt", equalTo(t.minusSeconds(60).toString())).body("state", equalTo("scheduled"))
                .body("replaced", equalTo(true));
        post("/jobs", job(topic, "j", t.minusSeconds(120), "4", "extend")).then().statusCode(200)
                .body("runAt", equalTo(t.minusSeconds(60).toString())).body("replaced", equalTo(true));
        post("/jobs", job(topic, "j", t.plusSeconds(120), "5", "extend")).then().statusCode(200)
                .body("runAt", equalTo(t.plusSeconds(120).toString())).body("replaced", equalTo(true));
        assertScheduledAt(jobs.get(topic, "j").orElseThrow(), t.plusSeconds(120));
        // A new id is simply created, whatever ifExists says.
        post("/jobs", job(topic, "fresh", t, "1", "extend")).then().statusCode(201);
    }

    private static void assertScheduledAt(JobInfo info, Instant runAt) {
        assertEquals(runAt, info.runAt());
        assertEquals(JobState.SCHEDULED, info.state());
    }

    @Test
    void aJobInFlightIsAConflictAndADeadIdIsEnqueuedAnew() {
        String topic = Topics.fresh("ifx-api");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("run").payload(1).maxAttempts(1));
        jobs.schedule(JobRequest.topic(topic).id("die").payload(1).maxAttempts(1));
        List<io.delayq.store.TakenJob> taken = new ArrayList<>();
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
            taken.addAll(store.take(p, 2, 30_000, "t" + taken.size() + ":", new HashSet<>(), List.of(), 0).jobs());
            return taken.size() == 2;
        });
        taken.stream().filter(j -> j.lease().id().equals("die")).forEach(j -> store.fail(p, j.lease(), 0, "boom", 3));

        Instant later = Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.MILLIS);
        for (String mode : List.of("replace", "extend")) {
            post("/jobs", job(topic, "run", later, "2", mode)).then().statusCode(409)
                    .contentType(Problem.MEDIA_TYPE).body("state", equalTo("inflight")).body("id", equalTo("run"));
        }
        post("/jobs", job(topic, "run", later, "2", "keep")).then().statusCode(200).body("state", equalTo("inflight"));
        post("/jobs/batch", "[" + job(topic, "run", later, "2", "extend") + "," + job(topic, "die", later, "3", "replace")
                + "]").then().statusCode(200)
                .body("[0].status", equalTo(409)).body("[0].state", equalTo("inflight"))
                .body("[1].status", equalTo(201)).body("[1].state", equalTo("scheduled")).body("[1].attempts", equalTo(0))
                .body("[1].runAt", equalTo(later.toString()));
        JobInfo revived = jobs.get(topic, "die").orElseThrow();
        assertEquals(JobState.SCHEDULED, revived.state());
        assertEquals(later, revived.runAt());
        // The Java API answers the job as it is: the caller sees it in flight, not replaced.
        JobInfo running = jobs.schedule(JobRequest.topic(topic).id("run").payload(3).ifExists(IfExists.REPLACE));
        assertEquals(JobState.INFLIGHT, running.state());
        assertTrue(!running.replaced() && !running.created());
    }

    @Test
    void aBatchReportsEachItemsOutcome() {
        String topic = Topics.fresh("ifx-api");
        Instant t = Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.MILLIS);
        post("/jobs/batch", "[" + job(topic, "a", t, "1", null) + "," + job(topic, "a", t.plusSeconds(1), "2", "replace")
                + "," + job(topic, "b", t, "1", "keep") + "]").then().statusCode(200)
                .body("[0].status", equalTo(201)).body("[0].replaced", nullValue())
                .body("[1].status", equalTo(200)).body("[1].replaced", equalTo(true))
                .body("[1].runAt", equalTo(t.plusSeconds(1).toString()))
                .body("[2].status", equalTo(201));
    }

    /** "dedup" remembers succeeded ids for an hour (see the test properties); its observer acks. */
    @Test
    void anIdRememberedByTheDedupWindowIsEnqueuedAnew() {
        String id = Topics.fresh("ifx");
        post("/jobs", "{\"topic\":\"dedup\",\"id\":\"" + id + "\"}").then().statusCode(201);
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> jobs.get("dedup", id).map(j -> j.state() == JobState.SUCCEEDED).orElse(false));
        Instant later = Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.MILLIS);
        post("/jobs", job("dedup", id, later, "1", null)).then().statusCode(200).body("state", equalTo("succeeded"));
        post("/jobs", job("dedup", id, later, "1", "extend")).then().statusCode(201).body("state", equalTo("scheduled"))
                .body("runAt", equalTo(later.toString()));
        jobs.cancel("dedup", id);
    }

    @Test
    void aBadIfExistsIsAFourHundredNamingTheFieldAndNothingIsWritten() {
        String topic = Topics.fresh("ifx-api");
        Instant t = Instant.now().plus(Duration.ofHours(1));
        post("/jobs", job(topic, "x", t, "1", "overwrite")).then().statusCode(400).body("field", equalTo("ifExists"));
        post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"x\",\"ifExists\":true}").then().statusCode(400)
                .body("field", equalTo("ifExists"));
        post("/jobs/batch", "[" + job(topic, "y", t, "1", "keep") + "," + job(topic, "z", t, "1", "REPLACE") + "]")
                .then().statusCode(400).body("field", equalTo("jobs[1].ifExists"));
        given().get("/jobs/" + topic + "/x").then().statusCode(404);
        given().get("/jobs/" + topic + "/y").then().statusCode(404);
    }

    /**
     * 100 extends of one id at once, over REST and from Java, each with its own runAt: one job is
     * left, at the latest of them, whatever order Redis ran them in.
     */
    @Test
    void concurrentExtendsOfOneIdEndWithOneJobAtTheLatestRunAt() throws Exception {
        String topic = Topics.fresh("ifx-api");
        Instant base = Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.MILLIS);
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            order.add(i);
        }
        Collections.shuffle(order);
        List<CompletableFuture<Integer>> calls = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(20)) {
            for (int i : order) {
                Instant runAt = base.plusSeconds(i);
                calls.add(i % 2 == 0
                        ? CompletableFuture.supplyAsync(() -> post("/jobs", job(topic, "debounce", runAt, Integer.toString(i),
                                "extend")).statusCode(), pool)
                        : reactive.schedule(JobRequest.topic(topic).id("debounce").payload(i).runAt(runAt)
                                .ifExists(IfExists.EXTEND)).map(info -> info.created() ? 201 : 200).subscribeAsCompletionStage()
                                .toCompletableFuture());
            }
            List<Integer> statuses = new ArrayList<>();
            for (CompletableFuture<Integer> c : calls) {
                statuses.add(c.get());
            }
            assertEquals(1, statuses.stream().filter(s -> s == 201).count(), "one created: " + statuses);
            assertEquals(99, statuses.stream().filter(s -> s == 200).count(), statuses.toString());
        }
        JobInfo info = jobs.get(topic, "debounce").orElseThrow();
        assertEquals(base.plusSeconds(99), info.runAt());
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(topic);
            assertEquals(1, redis.num("HLEN", k + "jobs"));
            String shard = k + "due:" + io.delayq.store.Keys.dayOf(base.plusSeconds(99).toEpochMilli());
            assertEquals(Long.toString(base.plusSeconds(99).toEpochMilli()), redis.str("ZSCORE", shard, "debounce"));
            long entries = 0;
            for (Object day : redis.list("ZRANGE", k + "days", "0", "-1")) {
                entries += redis.num("ZCARD", k + "due:" + day);
            }
            assertEquals(1, entries, "one entry over all shards");
        }
    }
}
