package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.DelayqConfig;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.JobValidator;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/** The scripts' lease rules, driven directly on topics no replica serves. */
class LeaseScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured();
    JobQueue store = STORE.queue;
    Inspection inspection = STORE.inspection;
    DelayqConfig config = STORE.config;
    Keys keys = STORE.keys;
    io.vertx.redis.client.Redis redisClient = STORE.client;
    private final JobValidator validator = new JobValidator(config, new RedisClock());

    /** Enqueues a job as {@code Jobs.schedule} writes it (the same rules and record), straight to the store. */
    private void schedule(JobRequest request) {
        NewJob job = validator.validate(request, new ObjectMapper());
        store.enqueue(store.partitionOf(job.topic(), job.id(), job.group()), List.of(job), "");
    }

    @Test
    void takesOnlyJobsWhoseRunAtHasPassedOldestDayFirstAndDropsEmptiedShards() {
        String topic = HandBuiltStore.fresh("take");
        Partition p = store.partitionsOf(topic).get(0);
        Instant fiveDaysAgo = Instant.now().minus(Duration.ofDays(5));
        schedule(JobRequest.topic(topic).id("old").runAt(fiveDaysAgo));
        schedule(JobRequest.topic(topic).id("now").delay(Duration.ZERO));
        schedule(JobRequest.topic(topic).id("later").delay(Duration.ofHours(1)));
        Set<Integer> older = new HashSet<>();
        TakeResult r = store.take(p, 10, 30_000, "t1:", older, List.of(), 0);
        assertEquals(List.of("old", "now"), r.jobs().stream().map(j -> j.lease().id()).toList());
        assertTrue(older.contains(Keys.dayOf(fiveDaysAgo.toEpochMilli())), "learnt the old day: " + older);
        assertTrue(r.nextDue() > r.now(), "next due is the job in an hour");
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertNull(redis.str("ZSCORE", k + "days", Keys.dayOf(fiveDaysAgo.toEpochMilli())), "emptied shard left the index");
            assertEquals(0L, redis.num("EXISTS", k + "due:" + Keys.dayOf(fiveDaysAgo.toEpochMilli())));
            assertEquals(2L, redis.num("ZCARD", k + "inflight"));
        }
        assertEquals(JobState.INFLIGHT, inspection.get(topic, "old").orElseThrow().state());
        assertEquals(0, store.take(p, 10, 30_000, "t2:", older, List.of(), 0).jobs().size(), "nothing more is due");
    }

    @Test
    void aStaleHoldersLateAckOrFailDoesNotTouchTheNewAttempt() throws Exception {
        String topic = HandBuiltStore.fresh("stale");
        Partition p = store.partitionsOf(topic).get(0);
        Set<Integer> older = new HashSet<>();
        Lease first = staleLeaseOfJ(topic, p, older);
        TakenJob second = store.take(p, 1, 30_000, "B:", older, List.of(), 0).jobs().get(0);
        assertEquals(0, second.record().attempts(), "the lost attempt is counted apart");
        assertEquals(1, second.record().lostAttempts());

        assertEquals(List.of("j"), store.ack(p, List.of(first)), "late ack is stale");
        assertEquals(List.of("j"), store.take(p, 0, 30_000, "C:", older, List.of(first), 0).staleAcks(),
                "a late ack carried by a take is stale too");
        assertEquals(FailOutcome.Kind.STALE, store.fail(p, first, 10, "late", 10).kind());
        assertEquals(List.of("j"), store.extend(p, 30_000, List.of(first)));
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertEquals("B:1", redis.str("HGET", k + "leases", "j"));
            assertNotNull(redis.str("ZSCORE", k + "inflight", "j"));
            assertNotNull(redis.str("HGET", k + "jobs", "j"));
        }
        assertEquals(List.of(), store.take(p, 10, 30_000, "D:", older, List.of(second.lease()), 0).staleAcks());
        assertTrue(inspection.get(topic, "j").isEmpty(), "the take carried the ack");
    }

    @Test
    void aStaleHoldersSnoozeDoesNotTouchTheNewAttemptAndTheHoldersSnoozeKeepsAttemptsAndError() throws Exception {
        String topic = HandBuiltStore.fresh("stale-snooze");
        Partition p = store.partitionsOf(topic).get(0);
        Set<Integer> older = new HashSet<>();
        Lease first = staleLeaseOfJ(topic, p, older);
        TakenJob second = store.take(p, 1, 30_000, "B:", older, List.of(), 0).jobs().get(0);

        assertTrue(store.snooze(p, first, false, 60_000).isEmpty(), "the stale holder's snooze is refused");
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertEquals("B:1", redis.str("HGET", k + "leases", "j"));
            assertNotNull(redis.str("ZSCORE", k + "inflight", "j"));
        }
        var running = inspection.get(topic, "j").orElseThrow();
        assertEquals(JobState.INFLIGHT, running.state());

        long at = store.snooze(p, second.lease(), true, running.runAt().toEpochMilli() + 3_600_000).orElseThrow();
        var snoozed = inspection.get(topic, "j").orElseThrow();
        assertEquals(JobState.SCHEDULED, snoozed.state());
        assertEquals(at, snoozed.runAt().toEpochMilli());
        assertEquals(0, snoozed.attempts(), "neither the lost attempt nor the snoozed one is an attempt");
        assertEquals(1, snoozed.lostAttempts(), "the snooze keeps the lost attempt");
        assertEquals(running.lastError(), snoozed.lastError());
        assertEquals(0, store.take(p, 1, 30_000, "C:", older, List.of(), 0).jobs().size(), "not due for an hour");
        assertTrue(store.snooze(p, second.lease(), false, 0).isEmpty(), "a second snooze of the same lease is stale");
    }

    @Test
    void aReclaimedJobWaitsForTheRetryBackoffOfItsLostAttempt() throws Exception {
        String topic = HandBuiltStore.fresh("reclaim-backoff");
        Partition p = store.partitionsOf(topic).get(0);
        schedule(JobRequest.topic(topic).id("crash").delay(Duration.ZERO));
        Set<Integer> older = new HashSet<>();
        store.take(p, 1, 1, "A:", older, List.of(), 0); // a 1 ms lease: its replica "died"
        awaitLeaseExpired(topic, "crash");
        try (Resp redis = HandBuiltStore.resp()) {
            long before = Long.parseLong(redis.list("TIME").get(0).toString()) * 1000;
            assertEquals(1, store.reclaim(p, 100, 10, 3, List.of(), 0, 60_000, 2.0, 600_000, 0)[0]);
            var info = inspection.get(topic, "crash").orElseThrow();
            assertEquals(JobState.SCHEDULED, info.state());
            assertTrue(info.runAt().toEpochMilli() >= before + 59_000,
                    "due a backoff (60 s) after the reclaim, not at once: " + info.runAt());
            assertEquals(0, store.take(p, 1, 30_000, "B:", older, List.of(), 0).jobs().size(), "not due yet");
        }
    }

    @Test
    void requeuePutsOurUnfinishedJobsBackDueNowWithoutCountingTheAttempt() {
        String topic = HandBuiltStore.fresh("requeue");
        Partition p = store.partitionsOf(topic).get(0);
        schedule(JobRequest.topic(topic).id("r").delay(Duration.ZERO));
        TakenJob t = store.take(p, 1, 30_000, "R:", new HashSet<>(), List.of(), 0).jobs().get(0);
        assertEquals(0, store.requeue(p, List.of(new Lease("r", "not-ours"))));
        assertEquals(1, store.requeue(p, List.of(t.lease())));
        var info = inspection.get(topic, "r").orElseThrow();
        assertEquals(JobState.SCHEDULED, info.state());
        assertEquals(0, info.attempts());
        assertEquals(1, store.take(p, 1, 30_000, "S:", new HashSet<>(), List.of(), 0).jobs().size(), "due at once");
    }

    @Test
    void jobsOfATakeWhoseReplyCameAfterTheTimeoutArePutBackAtOnce() {
        String topic = HandBuiltStore.fresh("late-reply");
        Partition p = store.partitionsOf(topic).get(0);
        schedule(JobRequest.topic(topic).id("late").delay(Duration.ZERO));
        // A store whose Redis calls give up at once: Redis runs the take (no deadline), the reply
        // comes after the caller stopped waiting, with the job leased to a token nobody holds.
        DelayqConfig impatient = (DelayqConfig) java.lang.reflect.Proxy.newProxyInstance(DelayqConfig.class.getClassLoader(),
                new Class<?>[] { DelayqConfig.class }, (proxy, method, args) -> method.getName().equals("redisTimeout")
                        ? Duration.ZERO
                        : method.invoke(config, args));
        RedisGateway gateway = new RedisGateway(redisClient, impatient, new SimpleMeterRegistry());
        JobQueue hasty = new JobQueue(new StoreLayer(gateway, new Scripts(gateway, new SimpleMeterRegistry()), keys, impatient));
        store.requeue(p, List.of()); // Redis knows the requeue script: hasty gives up before a NOSCRIPT retry
        store.take(p, 0, 600_000, "warm:", new HashSet<>(), List.of(), 0); // and the take script
        try (Resp redis = HandBuiltStore.resp()) {
            // Redis holds every command 300 ms: the take runs then (it has no deadline), well after
            // hasty stopped waiting, however fast this machine answers otherwise.
            redis.call("CLIENT", "PAUSE", "300", "ALL");
        }
        assertThrows(StoreUnavailableException.class,
                () -> hasty.take(p, 1, 600_000, "gone:", new HashSet<>(), List.of(), 0));
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5))
                .until(() -> inspection.get(topic, "late").orElseThrow().state() == JobState.SCHEDULED);
        var info = inspection.get(topic, "late").orElseThrow();
        assertEquals(0, info.attempts(), "the orphaned attempt is not counted");
        assertEquals(1, store.take(p, 1, 30_000, "next:", new HashSet<>(), List.of(), 0).jobs().size(),
                "due at once, not after a 10-minute lease");
    }

    @Test
    void jobsOfATakeWhoseReplyWasLostArePutBackByItsTokenPrefix() {
        String topic = HandBuiltStore.fresh("lost-reply");
        Partition p = store.partitionsOf(topic).get(0);
        schedule(JobRequest.topic(topic).id("lost").delay(Duration.ZERO));
        schedule(JobRequest.topic(topic).id("kept").delay(Duration.ZERO));
        // Two takes applied by Redis; the first one's reply never reached its caller. Both jobs are
        // due in the same or neighbouring milliseconds: which one each take gets is Redis' order.
        TakenJob lost = store.take(p, 1, 600_000, "r:1:", new HashSet<>(), List.of(), 0).jobs().get(0);
        TakenJob kept = store.take(p, 1, 600_000, "r:11:", new HashSet<>(), List.of(), 0).jobs().get(0);
        assertEquals(1, store.releaseTakesAsync(p, List.of("r:1:")).toCompletionStage().toCompletableFuture().join(), "only the lost take's job, not r:11:'s");
        var info = inspection.get(topic, lost.lease().id()).orElseThrow();
        assertEquals(JobState.SCHEDULED, info.state());
        assertEquals(0, info.attempts(), "the lost attempt is not counted");
        assertEquals(JobState.INFLIGHT, inspection.get(topic, kept.lease().id()).orElseThrow().state());
        assertEquals(0, store.releaseTakesAsync(p, List.of("r:1:")).toCompletionStage().toCompletableFuture().join(), "a second release finds nothing");
    }

    @Test
    void aStoreWithTopicsButNoPartitionsMarkerKeepsThePlainTags() {
        // Written by a release from before the marker: partitions 2, plain tags {t#0}, {t#1}.
        String prefix = HandBuiltStore.fresh("legacy");
        try (Resp redis = HandBuiltStore.resp()) {
            redis.call("SADD", prefix + ":topics", "orders");
            redis.call("ZADD", prefix + ":{orders#1}:due:20261130", "1", "old-job");
        }
        DelayqConfig twoPartitions = (DelayqConfig) java.lang.reflect.Proxy.newProxyInstance(
                DelayqConfig.class.getClassLoader(), new Class<?>[] { DelayqConfig.class },
                (proxy, method, args) -> switch (method.getName()) {
                    case "prefix" -> prefix;
                    case "partitions" -> 2;
                    default -> method.invoke(config, args);
                });
        RedisGateway gateway = new RedisGateway(redisClient, twoPartitions, new SimpleMeterRegistry());
        Keys legacyKeys = new Keys(twoPartitions);
        JobQueue legacy = new JobQueue(new StoreLayer(gateway, new Scripts(gateway, new SimpleMeterRegistry()), legacyKeys,
                twoPartitions));
        assertEquals(2, legacy.checkPartitions(2));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals("2", redis.str("GET", prefix + ":partitions"), "marked as the plain rule");
        }
        assertEquals(prefix + ":{orders#1}:jobs", legacyKeys.jobs(new Partition("orders", 1)), "the old jobs' keys");
    }

    /** Job "j" of the topic, taken under a 1 ms lease by "A:1" that expired and was reclaimed: that stale lease. */
    private Lease staleLeaseOfJ(String topic, Partition p, Set<Integer> older) {
        schedule(JobRequest.topic(topic).id("j").delay(Duration.ZERO));
        Lease first = store.take(p, 1, 1, "A:", older, List.of(), 0).jobs().get(0).lease();
        awaitLeaseExpired(topic, "j");
        assertEquals(1, store.reclaim(p, 100, 10, 3, List.of(), 0, 0, 1.0, 0, 0)[0]);
        return first;
    }

    /** Waits, on Redis' clock, until the lease of a job has expired. */
    private static void awaitLeaseExpired(String topic, String id) {
        try (Resp redis = HandBuiltStore.resp()) {
            long deadline = (long) Double.parseDouble(redis.str("ZSCORE", HandBuiltStore.keysOf(topic) + "inflight", id));
            org.awaitility.Awaitility.await().until(() -> Long.parseLong(redis.list("TIME").get(0).toString()) * 1000
                    + Long.parseLong(redis.list("TIME").get(1).toString()) / 1000 > deadline);
        }
    }
}
