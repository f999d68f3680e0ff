package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.CancelOutcome;
import io.delayq.core.DelayqConfig;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.JobValidator;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * The cancel of a job in flight, in the scripts (cancel.lua's mark on the lease, and every step
 * that meets it): the holder's failure, snooze or drain removes the job, a reclaim of a holder that
 * is gone removes it, an ack that comes first is a success; driven directly on topics no replica
 * serves. "cancel-dedup" has a dedup window of an hour.
 */
class CancelScriptsTest {
    private static final String DEDUP = "cancel-dedup";
    private static final HandBuiltStore STORE = HandBuiltStore.configured("delayq.topics." + DEDUP + ".dedup-window", "1h");
    private final JobQueue store = STORE.queue;
    private final Inspection inspection = STORE.inspection;
    private final DelayqConfig config = STORE.config;
    private final JobValidator validator = new JobValidator(config, new RedisClock());
    private final Set<Integer> older = new HashSet<>();

    private void schedule(JobRequest request) {
        NewJob job = validator.validate(request, new ObjectMapper());
        store.enqueue(store.partitionOf(job.topic(), job.id(), job.group()), List.of(job), "");
    }

    private JobInfo enqueueAgain(String topic, String id) {
        NewJob job = validator.validate(JobRequest.topic(topic).id(id).delay(Duration.ZERO), new ObjectMapper());
        return store.enqueue(store.partitionOf(topic, id, null), List.of(job), "").get(0);
    }

    /** Schedules job "j" due now and takes it: the lease of its attempt. */
    private TakenJob running(String topic, long leaseMs) {
        schedule(JobRequest.topic(topic).id("j").delay(Duration.ZERO));
        return store.take(store.partitionsOf(topic).get(0), 1, leaseMs, "A:", older, List.of(), 0).jobs().get(0);
    }

    /** As {@link #running}, then its cancel asked (the mark set, as DELETE does). */
    private TakenJob cancelledWhileRunning(String topic, long leaseMs) {
        TakenJob taken = running(topic, leaseMs);
        assertEquals(CancelOutcome.CANCELLING, inspection.cancel(topic, "j"));
        return taken;
    }

    private static void assertGone(String topic) {
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertNull(redis.str("HGET", k + "jobs", "j"), "record gone");
            assertNull(redis.str("ZSCORE", k + "inflight", "j"), "not in flight");
            assertNull(redis.str("HGET", k + "leases", "j"), "no lease");
            assertNull(redis.str("ZSCORE", k + "dead", "j"), "not dead");
            assertEquals(0L, redis.num("ZCARD", k + "callbacks"), "no dead callback");
            assertNull(redis.str("ZSCORE", k + "done", "j"), "not remembered as succeeded");
        }
    }

    @Test
    void aCancelOfAJobInFlightMarksItsLeaseOnceAndShowsItCancelling() {
        String topic = HandBuiltStore.fresh("cancel-mark");
        TakenJob taken = running(topic, 30_000);
        assertEquals(2, inspection.cancelCodeAsync(topic, "j").toCompletionStage().toCompletableFuture().join(),
                "marked now");
        assertEquals(3, inspection.cancelCodeAsync(topic, "j").toCompletionStage().toCompletableFuture().join(),
                "marked before: counted once");
        assertEquals(CancelOutcome.CANCELLING, inspection.cancel(topic, "j"));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(taken.lease().token() + JobQueue.CANCEL_MARK,
                    redis.str("HGET", HandBuiltStore.keysOf(topic) + "leases", "j"));
        }
        JobInfo got = inspection.get(topic, "j").orElseThrow();
        assertEquals(JobState.INFLIGHT, got.state());
        assertEquals(Boolean.TRUE, got.cancelling());
        JobInfo again = enqueueAgain(topic, "j");
        assertEquals(Boolean.TRUE, again.cancelling(), "an enqueue of its id is told it is cancelling (REST: 409)");
        assertTrue(!again.created());
    }

    @Test
    void theHoldersExtendAndItsCheckNameTheCancelledJobAndStillExtendIt() {
        String topic = HandBuiltStore.fresh("cancel-extend");
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = running(topic, 30_000);
        assertEquals(List.of(), store.extendAsync(p, 30_000, List.of(taken.lease())).toCompletionStage()
                .toCompletableFuture().join().cancelled());
        inspection.cancel(topic, "j");
        JobQueue.Extended e = store.extendAsync(p, 30_000, List.of(taken.lease())).toCompletionStage().toCompletableFuture()
                .join();
        assertEquals(List.of(), e.lost(), "still the holder's lease");
        assertEquals(List.of("j"), e.cancelled());
        assertEquals(List.of("j"), store.cancelledAsync(p, List.of(taken.lease())).toCompletionStage()
                .toCompletableFuture().join());
    }

    @Test
    void theHoldersFailureOfACancelledAttemptRemovesTheJobWithoutRetryDeathOrCallback() {
        String topic = HandBuiltStore.fresh("cancel-fail");
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = cancelledWhileRunning(topic, 30_000);
        assertEquals(FailOutcome.Kind.CANCELLED, store.fail(p, taken.lease(), 10, "cancelled", 1, true).kind(),
                "even a permanent failure (the last attempt) does not bury it");
        assertGone(topic);
        assertTrue(inspection.get(topic, "j").isEmpty(), "GET: 404");
        assertTrue(enqueueAgain(topic, "j").created(), "the id is free at once");
    }

    @Test
    void theHoldersSnoozeOrDrainOfACancelledAttemptRemovesTheJob() {
        String topic = HandBuiltStore.fresh("cancel-snooze");
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = cancelledWhileRunning(topic, 30_000);
        assertTrue(store.snooze(p, taken.lease(), false, 60_000).isEmpty());
        assertGone(topic);

        String drained = HandBuiltStore.fresh("cancel-drain");
        Partition q = store.partitionsOf(drained).get(0);
        TakenJob other = cancelledWhileRunning(drained, 30_000);
        assertEquals(0, store.requeue(q, List.of(other.lease())), "not put back");
        assertGone(drained);
    }

    @Test
    void anAckThatComesFirstIsASuccessAndTheCancelThenFindsNothing() {
        String topic = DEDUP;
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = running(topic, 30_000);
        store.ack(p, List.of(taken.lease()));
        assertEquals(CancelOutcome.UNKNOWN, inspection.cancel(topic, "j"), "nothing left to cancel (REST: 404)");
        assertEquals(JobState.SUCCEEDED, inspection.get(topic, "j").orElseThrow().state(), "remembered as succeeded");
    }

    @Test
    void anAckAfterTheMarkIsStillTheHoldersAndASuccess() {
        String topic = HandBuiltStore.fresh("cancel-ack");
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = cancelledWhileRunning(topic, 30_000);
        assertEquals(List.of(), store.ack(p, List.of(taken.lease())), "the marked lease is the holder's");
        assertGone(topic);
    }

    @Test
    void aReclaimOfACancelledJobWhoseHolderIsGoneRemovesIt() {
        String topic = HandBuiltStore.fresh("cancel-reclaim");
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = cancelledWhileRunning(topic, 1);
        awaitLeaseExpired(topic);
        int[] r = store.reclaim(p, 100, 10, 3, List.of(), 0, 0, 1.0, 0, 0);
        assertEquals(List.of(0, 0, 1), List.of(r[0], r[1], r[2]), "removed, not run again nor buried");
        assertGone(topic);
        assertEquals(List.of("j"), store.ack(p, List.of(taken.lease())), "the gone holder's late ack is stale");
        assertTrue(inspection.get(topic, "j").isEmpty());
    }

    @Test
    void aReclaimLeavesTheCallersOwnCancelledLeaseToItsHolder() {
        String topic = HandBuiltStore.fresh("cancel-own");
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = cancelledWhileRunning(topic, 1);
        awaitLeaseExpired(topic);
        int[] r = store.reclaim(p, 100, 10, 3, List.of(taken.lease().token()), 0, 0, 1.0, 0, 0);
        assertEquals(0, r[2], "the caller still runs it: its own outcome removes it");
        assertEquals(FailOutcome.Kind.CANCELLED, store.fail(p, taken.lease(), 10, "cancelled", 3).kind());
        assertGone(topic);
    }

    /** Waits, on Redis' clock, until the lease of job "j" has expired. */
    private static void awaitLeaseExpired(String topic) {
        try (Resp redis = HandBuiltStore.resp()) {
            long deadline = (long) Double.parseDouble(redis.str("ZSCORE", HandBuiltStore.keysOf(topic) + "inflight", "j"));
            org.awaitility.Awaitility.await().until(() -> Long.parseLong(redis.list("TIME").get(0).toString()) * 1000
                    + Long.parseLong(redis.list("TIME").get(1).toString()) / 1000 > deadline);
        }
    }
}
