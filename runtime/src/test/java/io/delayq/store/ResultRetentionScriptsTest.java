package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.JobValidator;
import io.delayq.core.NewJob;
import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;

/**
 * Result retention in the scripts: the ack (its own script, or carried by a take) moves a
 * succeeded job with its result out of flight in one step, to where GET and the listing read it;
 * a topic without a retention keeps nothing; the partition's share of delayq.results.max-jobs
 * keeps the newest (oldest dropped first, in the same ack); the retention's age hides and expires
 * the rest; an oversize result is flagged; a stale ack keeps nothing; an id enqueued again is a
 * new job, whose success replaces the kept one; and while Redis is full the ack still completes
 * the job but keeps nothing.
 */
class ResultRetentionScriptsTest {
    static final String KEPT = HandBuiltStore.fresh("res");
    static final String PLAIN = HandBuiltStore.fresh("res-off");
    static final String CAPPED = HandBuiltStore.fresh("res-cap");
    static final String SHORT = HandBuiltStore.fresh("res-short");
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics." + KEPT + ".result-retention", "10m",
            "delayq.topics." + SHORT + ".result-retention", "1s",
            "delayq.topics." + CAPPED + ".result-retention", "10m",
            "delayq.results.max-jobs", "5");
    private final JobQueue store = STORE.queue;

    private static void schedule(HandBuiltStore s, String topic, List<String> ids) {
        JobValidator validator = new JobValidator(s.config, new RedisClock());
        for (String id : ids) {
            NewJob job = validator.validate(JobRequest.topic(topic).id(id).payload(java.util.Map.of("n", id))
                    .delay(Duration.ZERO), new ObjectMapper());
            s.queue.enqueue(s.queue.partitionOf(topic, id, null), List.of(job), "");
        }
    }

    private static List<Lease> takeAll(HandBuiltStore s, Partition p) {
        return s.queue.take(p, 1000, 30_000, "A:", new HashSet<>(), List.of(), 0).jobs().stream().map(TakenJob::lease)
                .toList();
    }

    /** Enqueues one job due now, takes it, and acks it with {@code field} staged as its result. */
    private void succeed(String topic, String id, String field) {
        Partition p = store.partitionsOf(topic).get(0);
        schedule(STORE, topic, List.of(id));
        Lease lease = takeAll(STORE, p).get(0);
        store.stageResult(lease, field);
        assertEquals(List.of(), store.ack(p, List.of(lease)));
        store.acksSettled(List.of(lease));
    }

    @Test
    void anAckedJobWithAResultIsReadableAsSucceededWithItsResultAndRecord() {
        Partition p = store.partitionsOf(KEPT).get(0);
        succeed(KEPT, "a1", ResultRetention.kept("{\"total\":42,\"lines\":[1,2]}"));

        JobInfo info = STORE.inspection.get(KEPT, "a1").orElseThrow();
        assertEquals(JobState.SUCCEEDED, info.state());
        assertEquals("{\"total\":42,\"lines\":[1,2]}", info.result());
        assertEquals(1, info.attempts(), "the attempts it took, the one that succeeded included");
        assertNotNull(info.finishedAt());
        assertNotNull(info.runAt(), "the record as it succeeded");
        assertNull(info.resultDropped());
        assertEquals("{\"n\":\"a1\"}", STORE.inspection.lookup(KEPT, "a1").orElseThrow().payload());
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0L, redis.num("HLEN", STORE.keys.jobs(p)), "out of jobs: the id is free");
            assertEquals(0L, redis.num("ZCARD", STORE.keys.inflight(p)));
            assertEquals(0L, redis.num("HLEN", STORE.keys.leases(p)));
            long ttl = redis.num("PTTL", STORE.keys.results(p));
            assertTrue(ttl > 0 && ttl <= 600_000, "the results expire a retention after their last write: " + ttl);
        }
    }

    @Test
    void acksCarriedByATakeKeepTheirResultsAndJobsWithoutOneAreKeptWithout() {
        Partition p = store.partitionsOf(KEPT).get(0);
        schedule(STORE, KEPT, List.of("c1", "c2"));
        List<Lease> leases = takeAll(STORE, p);
        Lease withResult = leases.stream().filter(l -> l.id().equals("c1")).findFirst().orElseThrow();
        store.stageResult(withResult, ResultRetention.kept("\"done\""));
        store.take(p, 10, 30_000, "B:", new HashSet<>(), leases, 0);

        assertEquals("\"done\"", STORE.inspection.get(KEPT, "c1").orElseThrow().result());
        JobInfo none = STORE.inspection.get(KEPT, "c2").orElseThrow();
        assertEquals(JobState.SUCCEEDED, none.state());
        assertNull(none.result());
    }

    @Test
    void aTopicWithoutRetentionKeepsNothing() {
        Partition p = store.partitionsOf(PLAIN).get(0);
        succeed(PLAIN, "p1", ResultRetention.kept("1"));
        assertEquals(Optional.empty(), STORE.inspection.get(PLAIN, "p1"));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0L, redis.num("EXISTS", STORE.keys.results(p)));
        }
    }

    @Test
    void overTheCapTheOldestSucceededJobsAreDroppedInTheSameAck() {
        Partition p = store.partitionsOf(CAPPED).get(0);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            ids.add(String.format("k%02d", i));
        }
        schedule(STORE, CAPPED, ids);
        List<Lease> leases = takeAll(STORE, p);
        // One ack per job, in id order: each a later Redis time (or the same, then by id).
        for (String id : ids) {
            Lease l = leases.stream().filter(x -> x.id().equals(id)).findFirst().orElseThrow();
            store.ack(p, List.of(l));
        }
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(5L, redis.num("ZCARD", STORE.keys.succeeded(p)));
            assertEquals(5L, redis.num("HLEN", STORE.keys.results(p)), "entry and data go together");
        }
        for (int i = 0; i < 7; i++) {
            assertEquals(Optional.empty(), STORE.inspection.get(CAPPED, ids.get(i)), ids.get(i) + " dropped");
        }
        for (int i = 7; i < 12; i++) {
            assertEquals(JobState.SUCCEEDED, STORE.inspection.get(CAPPED, ids.get(i)).orElseThrow().state());
        }
        // Listed newest first, with their results.
        JobListing.Page page = new JobListing(STORE.layer).list(CAPPED, JobState.SUCCEEDED, JobListing.Filter.ALL, 3,
                false, null);
        assertEquals(List.of("k11", "k10", "k09"), page.jobs().stream().map(j -> j.info().id()).toList());
        assertNotNull(page.cursor());
        JobListing.Page rest = new JobListing(STORE.layer).list(CAPPED, JobState.SUCCEEDED, JobListing.Filter.ALL, 3,
                true, page.cursor());
        assertEquals(List.of("k08", "k07"), rest.jobs().stream().map(j -> j.info().id()).toList());
        assertEquals("{\"n\":\"k08\"}", rest.jobs().get(0).payload());
        assertNull(rest.cursor());
    }

    @Test
    void anOversizeResultIsFlaggedDroppedAndACutBodyFlaggedCut() {
        Partition p = store.partitionsOf(KEPT).get(0);
        schedule(STORE, KEPT, List.of("big", "cut"));
        List<Lease> leases = takeAll(STORE, p);
        for (Lease l : leases) {
            store.stageResult(l, l.id().equals("big") ? ResultRetention.dropped() : ResultRetention.cut("\"<html>\""));
        }
        store.ack(p, leases);
        JobInfo big = STORE.inspection.get(KEPT, "big").orElseThrow();
        assertEquals(Boolean.TRUE, big.resultDropped());
        assertNull(big.result());
        JobInfo cut = STORE.inspection.get(KEPT, "cut").orElseThrow();
        assertEquals(Boolean.TRUE, cut.resultCut());
        assertEquals("\"<html>\"", cut.result());
    }

    @Test
    void aStaleAckKeepsNothingAndTheNewAttemptStands() {
        Partition p = store.partitionsOf(KEPT).get(0);
        schedule(STORE, KEPT, List.of("s1"));
        Lease lease = takeAll(STORE, p).get(0);
        Lease stale = new Lease(lease.id(), "Z:1");
        store.stageResult(stale, ResultRetention.kept("1"));
        assertEquals(List.of("s1"), store.ack(p, List.of(stale)));
        assertEquals(JobState.INFLIGHT, STORE.inspection.get(KEPT, "s1").orElseThrow().state());
    }

    @Test
    void anIdEnqueuedAgainIsANewJobWhoseSuccessReplacesTheKeptOne() {
        Partition p = store.partitionsOf(KEPT).get(0);
        succeed(KEPT, "again", ResultRetention.kept("1"));
        schedule(STORE, KEPT, List.of("again"));
        assertEquals(JobState.SCHEDULED, STORE.inspection.get(KEPT, "again").orElseThrow().state(), "the new job first");
        Lease second = takeAll(STORE, p).get(0);
        store.stageResult(second, ResultRetention.kept("2"));
        store.ack(p, List.of(second));
        assertEquals("2", STORE.inspection.get(KEPT, "again").orElseThrow().result());
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(1L, redis.num("ZSCORE", STORE.keys.succeeded(p), "again") > 0 ? 1L : 0L);
        }
    }

    @Test
    void pastTheRetentionASucceededJobIsGoneAndItsKeysExpire() {
        Partition p = store.partitionsOf(SHORT).get(0);
        schedule(STORE, SHORT, List.of("old"));
        Lease lease = takeAll(STORE, p).get(0);
        store.ack(p, List.of(lease));
        assertEquals(JobState.SUCCEEDED, STORE.inspection.get(SHORT, "old").orElseThrow().state());
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> STORE.inspection.get(SHORT, "old").isEmpty());
        try (Resp redis = HandBuiltStore.resp()) {
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> redis.num("EXISTS", STORE.keys.results(p)) == 0
                    && redis.num("EXISTS", STORE.keys.succeeded(p)) == 0);
        }
    }

    @Test
    void whileRedisIsFullTheAckCompletesTheJobAndKeepsNothing() {
        RedisProcess server = RedisProcess.startEphemeral();
        try {
            HandBuiltStore s = HandBuiltStore.on(server, "delayq.topics." + KEPT + ".result-retention", "10m");
            Assumptions.assumeTrue(s.scripts.allowOom(), "allow-oom needs Redis 7 or later");
            Partition p = s.queue.partitionsOf(KEPT).get(0);
            schedule(s, KEPT, List.of("f1", "f2"));
            List<Lease> leases = takeAll(s, p);
            try (Resp redis = new Resp(server.port())) {
                redis.call("SETRANGE", "filler", "8000000", "x");
                long used = 0;
                for (String line : redis.str("INFO", "memory").split("\r\n")) {
                    if (line.startsWith("used_memory:")) {
                        used = Long.parseLong(line.substring("used_memory:".length()));
                    }
                }
                redis.call("CONFIG", "SET", "maxmemory-policy", "noeviction");
                redis.call("CONFIG", "SET", "maxmemory", Long.toString(used - 1_000_000));
                NewJob late = new JobValidator(s.config, new RedisClock())
                        .validate(JobRequest.topic(KEPT).id("late").delay(Duration.ZERO), new ObjectMapper());
                // The enqueue that meets the full Redis tells the gateway (as in production).
                assertThrows(StoreUnavailableException.class, () -> s.queue.enqueue(p, List.of(late), ""));
                assertTrue(s.gateway.isFull());
                for (Lease l : leases) {
                    s.queue.stageResult(l, ResultRetention.kept("\"x\""));
                }
                assertEquals(List.of(), s.queue.ack(p, leases), "acked while full");
                assertEquals(0L, redis.num("ZCARD", s.keys.inflight(p)));
                assertEquals(0L, redis.num("HLEN", s.keys.jobs(p)));
                assertEquals(0L, redis.num("EXISTS", s.keys.results(p)), "nothing kept while full");
                redis.call("CONFIG", "SET", "maxmemory", "0");
            }
        } finally {
            server.stop();
        }
    }
}
