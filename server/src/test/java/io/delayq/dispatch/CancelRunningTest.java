package io.delayq.dispatch;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.CancelOutcome;
import io.delayq.core.Job;
import io.delayq.core.JobRequest;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.delayq.core.ReactiveJobs;
import io.delayq.dev.Resp;
import io.delayq.store.JobQueue;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.smallrye.mutiny.Uni;

/**
 * The cancel of a running job, with the default lease and heartbeat (30 s, 10 s): the attempt ends
 * for every kind of observer well before either could have ended it (the wake-up message, or the
 * heartbeat's read of the marks when that message is lost), and the job leaves Redis without a
 * retry or a dead entry. The HTTP target's case is in {@link HttpTargetTimeoutTest} (its profile
 * has the target).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class CancelRunningTest {
    static final String SYNC = "cancel-sync";
    static final String REACTIVE = "cancel-reactive";
    static final String COOPERATIVE = "cancel-coop";
    /** Well under the default lease (30 s) and heartbeat (10 s): what ends the attempt is the cancel. */
    static final Duration ENDS_WITHIN = Duration.ofSeconds(8);

    /** Attempts by job id: how each began and ended. */
    static final Map<String, List<String>> EVENTS = new ConcurrentHashMap<>();
    /** Held by the synchronous observer after its interruption, until the test lets it end. */
    static final Map<String, CountDownLatch> HOLD = new ConcurrentHashMap<>();

    static void note(String id, String event) {
        EVENTS.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(event);
    }

    static List<String> events(String id) {
        return EVENTS.getOrDefault(id, List.of());
    }

    @ApplicationScoped
    public static class Observers {
        /** Sleeps a minute; interrupted, waits for the test (when it holds it), then throws. */
        void sync(@Observes @JobTopic(SYNC) Job job) throws InterruptedException {
            note(job.id(), "started");
            try {
                Thread.sleep(60_000);
                note(job.id(), "slept");
            } catch (InterruptedException e) {
                note(job.id(), "interrupted");
                CountDownLatch hold = HOLD.get(job.id());
                if (hold != null) {
                    awaitIgnoringInterrupts(hold);
                }
                throw e;
            }
        }

        /** Never completes; its subscription's cancellation is noted. */
        Uni<Void> reactive(@Observes @JobTopic(REACTIVE) Job job) {
            note(job.id(), "started");
            return Uni.createFrom().<Void> nothing().onCancellation().invoke(() -> note(job.id(), "subscription cancelled"));
        }

        /** Works in steps for up to a minute, checking job.cancelled() between them, and returns. */
        void cooperative(@Observes @JobTopic(COOPERATIVE) Job job) {
            note(job.id(), "started");
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < end) {
                if (job.cancelled()) {
                    note(job.id(), "saw cancelled");
                    return;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // a step (an interrupt ends it early)
            }
            note(job.id(), "finished");
        }

        private static void awaitIgnoringInterrupts(CountDownLatch latch) {
            while (true) {
                try {
                    latch.await();
                    return;
                } catch (InterruptedException ignored) {
                    // waits for the test
                }
            }
        }
    }

    @Inject
    Jobs jobs;

    @Inject
    ReactiveJobs reactiveJobs;

    private static void enqueue(String topic, String id) {
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\"}").post("/jobs")
                .then().statusCode(201);
    }

    private static void awaitStarted(String id) {
        await().atMost(Duration.ofSeconds(30)).until(() -> events(id).contains("started"));
    }

    /** Gone from Redis: no record, lease, in-flight or dead entry, nothing remembered. */
    private static void assertGone(String topic, String id) {
        given().get("/jobs/" + topic + "/" + id).then().statusCode(404);
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(topic);
            assertNull(redis.str("HGET", k + "jobs", id));
            assertNull(redis.str("HGET", k + "leases", id));
            assertNull(redis.str("ZSCORE", k + "inflight", id));
            assertNull(redis.str("ZSCORE", k + "dead", id), "no dead entry");
        }
    }

    @Test
    void aSynchronousObserverIsInterruptedTheJobShowsCancellingAndThenLeavesForGood() {
        String id = Topics.fresh("sync");
        HOLD.put(id, new CountDownLatch(1));
        enqueue(SYNC, id);
        awaitStarted(id);
        given().delete("/jobs/" + SYNC + "/" + id).then().statusCode(202).body("id", equalTo(id))
                .body("topic", equalTo(SYNC)).body("state", equalTo("inflight")).body("cancelling", equalTo(true));
        await().atMost(ENDS_WITHIN).until(() -> events(id).contains("interrupted"));
        // Held by the observer: still in flight, cancelling; its id is not free yet.
        given().get("/jobs/" + SYNC + "/" + id).then().statusCode(200).body("state", equalTo("inflight"))
                .body("cancelling", equalTo(true));
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + SYNC + "\",\"id\":\"" + id + "\"}").post("/jobs")
                .then().statusCode(409);
        given().delete("/jobs/" + SYNC + "/" + id).then().statusCode(202);
        assertEquals(CancelOutcome.CANCELLING, jobs.cancel(SYNC, id), "Jobs.cancel of a job in flight");
        HOLD.get(id).countDown();
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertGone(SYNC, id));
        assertEquals(List.of("started", "interrupted"), events(id), "not run again");
        // The id is free at once: a new job of it runs (and is cancelled in turn).
        HOLD.remove(id);
        enqueue(SYNC, id);
        await().atMost(Duration.ofSeconds(30)).until(() -> events(id).size() == 3);
        assertEquals(CancelOutcome.CANCELLING, jobs.cancel(SYNC, id));
        await().atMost(ENDS_WITHIN).untilAsserted(() -> assertGone(SYNC, id));
    }

    @Test
    void aReactiveObserversSubscriptionIsCancelled() {
        String id = Topics.fresh("reactive");
        jobs.schedule(JobRequest.topic(REACTIVE).id(id));
        awaitStarted(id);
        assertEquals(CancelOutcome.CANCELLING, reactiveJobs.cancel(REACTIVE, id).await().atMost(Duration.ofSeconds(10)));
        await().atMost(ENDS_WITHIN).until(() -> events(id).contains("subscription cancelled"));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertGone(REACTIVE, id));
        assertEquals(List.of("started", "subscription cancelled"), events(id));
    }

    /** A job of the cooperative observer, running. */
    private static String cooperativeRunning(String what) {
        String id = Topics.fresh(what);
        enqueue(COOPERATIVE, id);
        awaitStarted(id);
        return id;
    }

    /** The cooperative observer saw its cancel and returned; the job left, not run again. */
    private static void assertCooperativeEnded(String id) {
        await().atMost(ENDS_WITHIN).until(() -> events(id).contains("saw cancelled"));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertGone(COOPERATIVE, id));
        assertEquals(List.of("started", "saw cancelled"), events(id));
    }

    @Test
    void aCooperativeObserverSeesCancelledAndItsReturnDoesNotCountAsASuccess() {
        String id = cooperativeRunning("coop");
        given().delete("/jobs/" + COOPERATIVE + "/" + id).then().statusCode(202);
        assertCooperativeEnded(id);
    }

    @Test
    void aCancelWhoseWakeUpWasLostReachesItsHolderThroughTheHeartbeat() {
        String id = cooperativeRunning("lost");
        // The mark as cancel.lua sets it, without its message: only the heartbeat can find it.
        try (Resp redis = RedisTestResource.resp()) {
            String leases = Topics.keys(COOPERATIVE) + "leases";
            String token = redis.str("HGET", leases, id);
            redis.num("HSET", leases, id, token + JobQueue.CANCEL_MARK);
        }
        assertCooperativeEnded(id);
    }

    @Test
    void aCancelOfAScheduledJobIsStill204AndAnUnknownOne404() {
        String id = Topics.fresh("scheduled");
        jobs.schedule(JobRequest.topic(SYNC).id(id).delay(Duration.ofHours(1)));
        given().delete("/jobs/" + SYNC + "/" + id).then().statusCode(204);
        given().delete("/jobs/" + SYNC + "/" + id).then().statusCode(404);
        assertTrue(events(id).isEmpty());
    }
}
