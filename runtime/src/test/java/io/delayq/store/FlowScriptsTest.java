package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/** Pause and the rate limit inside the take script, driven directly on topics no replica serves. */
class FlowScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured();
    JobQueue store = STORE.queue;
    Inspection inspection = STORE.inspection;
    TopicAdmin topicAdmin = STORE.topicAdmin;

    private void enqueueDue(Partition p, String prefix, int n) {
        List<NewJob> batch = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            batch.add(new NewJob(p.topic(), prefix + i, true, 0, 0, null));
        }
        store.enqueue(p, batch, "");
    }

    @Test
    void aPausedPartitionLeasesNothingWhileItsCarriedAcksStillCount() {
        String topic = HandBuiltStore.fresh("paused-take");
        Partition p = store.partitionsOf(topic).get(0);
        enqueueDue(p, "j", 3);
        Set<Integer> older = new HashSet<>();
        TakenJob running = store.take(p, 1, 30_000, "A:", older, List.of(), 0).jobs().get(0);

        FlowSettings paused = topicAdmin.pause(topic);
        assertTrue(paused.paused());
        TakeResult r = store.take(p, 10, 30_000, "B:", older, List.of(running.lease()), 0);
        assertTrue(r.paused(), "the take says paused");
        assertEquals(0, r.jobs().size(), "two jobs are due, none is taken");
        assertEquals(List.of(), r.staleAcks());
        assertTrue(inspection.get(topic, running.lease().id()).isEmpty(), "the carried ack was applied");
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertEquals(String.valueOf(paused.pausedAt()), redis.str("GET", k + "paused"));
            assertEquals(0L, redis.num("ZCARD", k + "inflight"));
            assertEquals(2L, redis.num("HLEN", k + "jobs"));
        }
        assertEquals(paused.pausedAt(), topicAdmin.pause(topic).pausedAt(), "a second pause keeps the first time");

        assertTrue(!topicAdmin.resume(topic).paused());
        TakeResult after = store.take(p, 10, 30_000, "C:", older, List.of(), 0);
        assertTrue(!after.paused());
        assertEquals(2, after.jobs().size(), "resumed: both due jobs are taken");
    }

    @Test
    void leasesThatExpireWhilePausedAreReclaimedAsUsual() {
        String topic = HandBuiltStore.fresh("paused-reclaim");
        Partition p = store.partitionsOf(topic).get(0);
        enqueueDue(p, "k", 1);
        Set<Integer> older = new HashSet<>();
        store.take(p, 1, 1, "A:", older, List.of(), 0); // a 1 ms lease: its replica "died"
        topicAdmin.pause(topic);
        try (Resp redis = HandBuiltStore.resp()) {
            long deadline = (long) Double.parseDouble(redis.str("ZSCORE", HandBuiltStore.keysOf(topic) + "inflight", "k0"));
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> redisTime(redis) > deadline);
        }
        assertEquals(1, store.reclaim(p, 100, 10, 3, java.util.List.of(), 0, 0, 1.0, 0, 0)[0]);
        var info = inspection.get(topic, "k0").orElseThrow();
        assertEquals(JobState.SCHEDULED, info.state());
        assertEquals(0, info.attempts(), "the lost attempt is counted apart");
        assertEquals(1, info.lostAttempts());
        assertEquals(0, store.take(p, 10, 30_000, "B:", older, List.of(), 0).jobs().size(), "still paused");
        topicAdmin.resume(topic);
        assertEquals(1, store.take(p, 10, 30_000, "C:", older, List.of(), 0).jobs().size());
    }

    /**
     * 100 jobs/s with one partition: a job every 10 ms, takes of 40 ms worth (4 jobs) plus 10 ms of
     * slack: the first take has 5. Every take, however often it is tried, stays within 5 + 100/s ×
     * the Redis time since the first; a take held back says when to come back (10 ms before its
     * batch of 4 is due).
     */
    @Test
    void theRateLimitHoldsEveryTakeWithinItsScheduleAndSaysWhenToComeBack() {
        String topic = HandBuiltStore.fresh("rate-take");
        Partition p = store.partitionsOf(topic).get(0);
        enqueueDue(p, "r", 60);
        assertEquals(100.0, topicAdmin.setRateLimit(topic, 100).rateLimit());
        Set<Integer> older = new HashSet<>();
        TakeResult first = store.take(p, 60, 30_000, "A:", older, List.of(), 0);
        assertEquals(5, first.jobs().size(), "a batch of 40 ms worth, and the slack's 10 ms");
        long start = first.now();
        assertTrue(first.notBefore() >= start + 39 && first.notBefore() <= start + 41,
                "the next batch 10 ms before it is due, in 50 ms: " + (first.notBefore() - start));
        TakeResult held = store.take(p, 60, 30_000, "H:", older, List.of(), 0);
        if (held.now() < first.notBefore()) {
            assertEquals(0, held.jobs().size(), "held back at once");
            assertEquals(first.notBefore(), held.notBefore());
        } else {
            // A loaded machine took longer than the 40 ms between the two takes: the second may have
            // its batch, still within the limit.
            assertTrue(first.jobs().size() + held.jobs().size() <= 5 + (held.now() - start) * 100 / 1000 + 1,
                    held.jobs().size() + " more jobs " + (held.now() - start) + " ms after the first take");
        }
        try (Resp redis = HandBuiltStore.resp()) {
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> redisTime(redis) >= held.notBefore());
        }
        TakeResult batch = store.take(p, 60, 30_000, "N:", older, List.of(), 0);
        assertTrue(batch.jobs().size() >= 4, "back when told: a batch of 4 (" + batch.jobs().size() + ")");
        int taken = first.jobs().size() + held.jobs().size() + batch.jobs().size();
        int calls = 1;
        while (taken < 60) {
            TakeResult r = store.take(p, 60, 30_000, "B" + calls++ + ":", older, List.of(), 0);
            taken += r.jobs().size();
            assertTrue(taken <= 5 + (r.now() - start) * 100 / 1000 + 1,
                    taken + " jobs taken " + (r.now() - start) + " ms after the first take");
            if (r.jobs().isEmpty()) {
                assertTrue(r.notBefore() > r.now(), "held back: told when to come back");
            }
            assertTrue(calls < 100_000, "the limit let the jobs go");
        }
        try (Resp redis = HandBuiltStore.resp()) {
            long span = redisTime(redis) - start;
            assertTrue(span >= 540, "60 jobs at 100/s with a burst of 5 take at least 550 ms: " + span);
            assertNotNull(redis.str("GET", HandBuiltStore.keysOf(topic) + "ratetat"), "the schedule is kept in Redis");
        }

        topicAdmin.clearRateLimit(topic);
        enqueueDue(p, "s", 30);
        TakeResult unlimited = store.take(p, 60, 30_000, "C:", older, List.of(), 0);
        assertEquals(30, unlimited.jobs().size(), "no limit: everything due at once");
        assertEquals(0, unlimited.notBefore());
    }

    @Test
    void aRaisedLimitTakesEffectAtOnceAndFlowSettingsAreTheSameInEveryRead() {
        String topic = HandBuiltStore.fresh("rate-raise");
        Partition p = store.partitionsOf(topic).get(0);
        enqueueDue(p, "x", 10);
        topicAdmin.setRateLimit(topic, 0.1); // one job per 10 s
        Set<Integer> older = new HashSet<>();
        assertEquals(1, store.take(p, 10, 30_000, "A:", older, List.of(), 0).jobs().size());
        TakeResult held = store.take(p, 10, 30_000, "B:", older, List.of(), 0);
        assertEquals(0, held.jobs().size());
        assertTrue(held.notBefore() - held.now() > 9_000, "the next job in 10 s");
        topicAdmin.setRateLimit(topic, 1000);
        assertEquals(9, store.take(p, 10, 30_000, "C:", older, List.of(), 0).jobs().size(),
                "the old limit's schedule does not hold the new one up");
        FlowSettings read = topicAdmin.flows(List.of(topic)).get(topic);
        assertEquals(1000.0, read.rateLimit());
        assertTrue(!read.paused());
        assertNull(topicAdmin.flows(List.of(HandBuiltStore.fresh("never"))).values().iterator().next().rateLimit());
    }

    @Test
    void aHeldTopicLeasesNothingInAnyPartitionUntilTheHoldEnds() {
        String topic = HandBuiltStore.fresh("held-take");
        List<Partition> ps = store.partitionsOf(topic);
        for (Partition p : ps) {
            enqueueDue(p, "h" + p.index() + "-", 2);
        }
        Set<Integer> older = new HashSet<>();
        topicAdmin.hold(topic, false, 1_500).toCompletionStage().toCompletableFuture().join();
        long heldUntil = -1;
        for (Partition p : ps) {
            TakeResult r = store.take(p, 10, 30_000, "A:", older, List.of(), 0);
            assertEquals(0, r.jobs().size(), "held: nothing leased in " + p);
            assertTrue(r.heldUntil() >= r.now() + 1_000 && r.heldUntil() <= r.now() + 1_500, "held ~1.5 s: " + r);
            assertEquals(r.heldUntil(), r.notBefore(), "the taker is told to come back when the hold ends");
            assertTrue(heldUntil < 0 || heldUntil == r.heldUntil(), "the same end in every partition");
            heldUntil = r.heldUntil();
        }
        // A hold only moves later: a shorter one (another replica's answer, say) keeps the longer one.
        topicAdmin.hold(topic, false, 100).toCompletionStage().toCompletableFuture().join();
        assertEquals(heldUntil, store.take(ps.get(0), 10, 30_000, "B:", older, List.of(), 0).heldUntil());
        FlowSettings shown = topicAdmin.flows(List.of(topic)).get(topic);
        assertEquals(heldUntil, shown.heldUntil(), "what GET /topics shows");
        assertTrue(!shown.paused());

        long end = heldUntil;
        try (Resp redis = HandBuiltStore.resp()) {
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> redisTime(redis) >= end);
            assertEquals(0L, redis.num("EXISTS", HandBuiltStore.keysOf(topic) + "held"), "the hold ends by itself");
        }
        for (Partition p : ps) {
            TakeResult r = store.take(p, 10, 30_000, "C:", older, List.of(), 0);
            assertEquals(2, r.jobs().size(), "the hold is over: both due jobs of " + p + " are taken");
            assertEquals(0, r.heldUntil());
        }
        assertTrue(!topicAdmin.flows(List.of(topic)).get(topic).held());
    }

    @Test
    void aHoldUntilATimeAlreadyPastHoldsNothing() {
        String topic = HandBuiltStore.fresh("held-past");
        Partition p = store.partitionsOf(topic).get(0);
        enqueueDue(p, "p", 1);
        topicAdmin.hold(topic, true, System.currentTimeMillis() - 60_000).toCompletionStage().toCompletableFuture().join();
        TakeResult r = store.take(p, 10, 30_000, "A:", new HashSet<>(), List.of(), 0);
        assertEquals(1, r.jobs().size());
        assertEquals(0, r.heldUntil());
    }

    private static long redisTime(Resp redis) {
        List<Object> t = redis.list("TIME");
        return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000;
    }
}
