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

import io.delayq.core.IfExists;
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
    static final String GONE = HandBuiltStore.fresh("res-forget");
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics." + KEPT + ".result-retention", "10m",
            "delayq.topics." + SHORT + ".result-retention", "1s",
            "delayq.topics." + CAPPED + ".result-retention", "10m",
            "delayq.topics." + GONE + ".result-retention", "10m",
            "delayq.results.max-jobs", "5");
    /** Four partitions: a job of a group lives in its group's, maybe not its id's. */
    static final String GROUPED = HandBuiltStore.fresh("res-4p");
    private static final HandBuiltStore FOUR = HandBuiltStore.configured("delayq.partitions", "4", "delayq.prefix",
            "dq4r", "delayq.topics." + GROUPED + ".result-retention", "10m");
    /** No cap: the retention's age alone bounds what is kept. */
    static final String AGED = HandBuiltStore.fresh("res-aged");
    private static final HandBuiltStore UNCAPPED = HandBuiltStore.configured("delayq.prefix", "dq0r",
            "delayq.topics." + AGED + ".result-retention", "2s", "delayq.results.max-jobs", "0");
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

    /** Enqueues one job of topic KEPT due now and takes it: its lease. */
    private Lease taken(String id) {
        schedule(STORE, KEPT, List.of(id));
        return takeAll(STORE, store.partitionsOf(KEPT).get(0)).get(0);
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
    void aJobWithAPriorityIsKeptWithItsPriorityAndResultAfterAMoveOfItsLane() {
        Partition p = store.partitionsOf(KEPT).get(0);
        long now = STORE.queue.redisTimeMs();
        STORE.queue.enqueue(p, List.of(
                new NewJob(KEPT, "pr1", false, now, 0, "{}", IfExists.KEEP, null, null, null, null, 1),
                new NewJob(KEPT, "pr5", false, now, 0, "{}", IfExists.KEEP, null, null, null, null, 5),
                new NewJob(KEPT, "pr3", false, now, 0, "{}", IfExists.KEEP, null, null, null, null, null)), "");
        // The lane-1 job is drained back (due now, in its lane) and taken again before its success.
        List<Lease> first = takeAll(STORE, p);
        assertEquals(List.of("pr1", "pr3", "pr5"), first.stream().map(Lease::id).toList(), "priority order");
        assertEquals(1, store.requeue(p, first.subList(0, 1)));
        List<Lease> again = takeAll(STORE, p);
        assertEquals(List.of("pr1"), again.stream().map(Lease::id).toList());
        List<Lease> all = List.of(again.get(0), first.get(1), first.get(2));
        for (Lease l : all) {
            store.stageResult(l, ResultRetention.kept("\"r-" + l.id() + "\""));
        }
        assertEquals(List.of(), store.ack(p, all));

        for (String id : List.of("pr1", "pr3", "pr5")) {
            JobInfo info = STORE.inspection.get(KEPT, id).orElseThrow();
            assertEquals(JobState.SUCCEEDED, info.state(), id);
            assertEquals("\"r-" + id + "\"", info.result(), id);
            assertEquals(Integer.parseInt(id.substring(2)), info.priority(), id + ": its priority kept with it");
        }
        JobListing.Page page = new JobListing(STORE.layer).list(KEPT, JobState.SUCCEEDED,
                new JobListing.Filter("pr", null, null, null), 10, true, null);
        assertEquals(3, page.jobs().size());
        for (JobListing.Listed l : page.jobs()) {
            assertEquals(Integer.parseInt(l.info().id().substring(2)), l.info().priority(), l.info().id());
            assertEquals("\"r-" + l.info().id() + "\"", l.info().result(), l.info().id());
        }
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0L, redis.num("ZCARD", STORE.keys.laneDays(p)), "nothing left in a lane");
        }
    }

    @Test
    void aLaterJobOfTheIdSnoozedOrRescheduledPastItsExpiresAtTakesTheKeptSuccessWithIt() {
        Partition p = store.partitionsOf(KEPT).get(0);
        for (String id : List.of("sx", "rx")) {
            succeed(KEPT, id, ResultRetention.kept("\"earlier\""));
        }
        long now = STORE.queue.redisTimeMs();
        // New jobs of both ids, expiring in a minute: sx is taken and snoozed for an hour, rx
        // rescheduled to an hour from now; both go to the dead set as expired.
        STORE.queue.enqueue(p, List.of(
                new NewJob(KEPT, "sx", false, now, 0, "{}", IfExists.KEEP, null, null, null, now + 60_000),
                new NewJob(KEPT, "rx", false, now + 30_000, 0, "{}", IfExists.KEEP, null, null, null, now + 60_000)), "");
        Lease sx = takeAll(STORE, p).stream().filter(l -> l.id().equals("sx")).findFirst().orElseThrow();
        assertTrue(store.snooze(p, sx, false, 3_600_000).isEmpty(), "snoozed past its expiresAt: dead");
        STORE.inspection.reschedule(KEPT, "rx", true, 3_600_000);
        for (String id : List.of("sx", "rx")) {
            assertEquals(JobState.DEAD, STORE.inspection.get(KEPT, id).orElseThrow().state(), id);
            try (Resp redis = HandBuiltStore.resp()) {
                assertNull(redis.call("ZSCORE", STORE.keys.succeeded(p), id), id + ": the earlier success went");
                assertEquals(0L, redis.num("HEXISTS", STORE.keys.results(p), id), id);
            }
        }
    }

    @Test
    void aSucceededListingReadsNoEntryWhoseIdCannotMatchThePrefix() {
        RedisProcess server = RedisProcess.startEphemeral();
        try (Resp redis = new Resp(server.port())) {
            HandBuiltStore s = HandBuiltStore.on(server, "delayq.topics." + KEPT + ".result-retention", "10m");
            Partition p = s.queue.partitionsOf(KEPT).get(0);
            schedule(s, KEPT, List.of("m1", "m2", "m3", "m4", "m5"));
            s.queue.ack(p, takeAll(s, p));
            redis.call("CONFIG", "RESETSTAT");
            assertEquals(List.of(), new JobListing(s.layer).list(KEPT, JobState.SUCCEEDED,
                    new JobListing.Filter("other", null, null, null), 100, false, null).jobs());
            assertEquals(-1, redis.str("INFO", "commandstats").indexOf("cmdstat_hget:"),
                    "no kept entry (record and result, up to 64 KiB each) read for an id of another prefix");
            assertEquals(5, new JobListing(s.layer).list(KEPT, JobState.SUCCEEDED,
                    new JobListing.Filter("m", null, null, null), 100, false, null).jobs().size());
        } finally {
            server.stop();
        }
    }

    @Test
    void aTopicWithOnlyKeptSuccessesIsInUseForTheTopicRetention() {
        String t = HandBuiltStore.fresh("res-active");
        HandBuiltStore s = HandBuiltStore.configured("delayq.topics." + t + ".result-retention", "10m");
        Partition p = s.queue.partitionsOf(t).get(0);
        schedule(s, t, List.of("only"));
        s.queue.ack(p, takeAll(s, p));
        assertEquals(JobState.SUCCEEDED, s.inspection.get(t, "only").orElseThrow().state());
        assertTrue(s.topicAdmin.activity(t).inUse(), "kept for its result-retention, not forgotten before");
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
        Lease stale = new Lease(taken("s1").id(), "Z:1");
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
            // An earlier job of f1 succeeded and is kept; f1 is enqueued again.
            schedule(s, KEPT, List.of("f1"));
            Lease earlier = takeAll(s, p).get(0);
            s.queue.stageResult(earlier, ResultRetention.kept("\"earlier\""));
            s.queue.ack(p, List.of(earlier));
            assertEquals("\"earlier\"", s.inspection.get(KEPT, "f1").orElseThrow().result());
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
                assertEquals(Optional.empty(), s.inspection.get(KEPT, "f1"),
                        "the earlier job's success went with the later one, not kept: never shown for it");
                redis.call("CONFIG", "SET", "maxmemory", "0");
            }
        } finally {
            server.stop();
        }
    }

    @Test
    void anIdEnqueuedAgainAndCancelledWhileScheduledLeavesNoEarlierSuccessBehind() {
        succeed(KEPT, "undone", ResultRetention.kept("1"));
        schedule(STORE, KEPT, List.of("undone"));
        assertEquals(io.delayq.core.CancelOutcome.CANCELLED, STORE.inspection.cancel(KEPT, "undone"));
        assertEquals(Optional.empty(), STORE.inspection.get(KEPT, "undone"), "the earlier success went with it");
    }

    @Test
    void anIdEnqueuedAgainThatDiesTakesTheEarlierSuccessWithIt() {
        Partition p = store.partitionsOf(KEPT).get(0);
        succeed(KEPT, "dies", ResultRetention.kept("1"));
        store.fail(p, taken("dies"), 0, "boom", 1, true);
        assertEquals(JobState.DEAD, STORE.inspection.get(KEPT, "dies").orElseThrow().state());
        try (Resp redis = HandBuiltStore.resp()) {
            // So that once the dead job is purged or trimmed, no earlier success answers for the id.
            assertNull(redis.call("ZSCORE", STORE.keys.succeeded(p), "dies"));
            assertEquals(0L, redis.num("HEXISTS", STORE.keys.results(p), "dies"));
        }
    }

    @Test
    void aKeptSuccessDoesNotHideALiveJobOfItsIdInItsGroupsPartition() {
        JobQueue q = FOUR.queue;
        String id = "x", group = null;
        for (int i = 0; group == null; i++) {
            if (!q.partitionOf(GROUPED, id, "g" + i).equals(q.partitionOf(GROUPED, id))) {
                group = "g" + i;
            }
        }
        Partition home = q.partitionOf(GROUPED, id);
        // An earlier job of the id, of no group: succeeded at home, kept there.
        q.enqueue(home, List.of(new NewJob(GROUPED, id, true, 0, 0, "1", io.delayq.core.IfExists.KEEP, null, null)), "");
        Lease lease = takeAll(FOUR, home).get(0);
        q.stageResult(lease, ResultRetention.kept("\"earlier\""));
        assertEquals(List.of(), q.ack(home, List.of(lease)));
        assertEquals(JobState.SUCCEEDED, FOUR.inspection.get(GROUPED, id).orElseThrow().state());
        // A job of a group with the id since, in its group's partition: GET answers it.
        q.enqueue(q.partitionOf(GROUPED, id, group),
                List.of(new NewJob(GROUPED, id, true, 3_600_000, 0, "2", io.delayq.core.IfExists.KEEP, null, group)), "");
        JobInfo live = FOUR.inspection.get(GROUPED, id).orElseThrow();
        assertEquals(JobState.SCHEDULED, live.state());
        assertEquals(group, live.group());
    }

    @Test
    void aListingCarriesResultsOnlyWithItsPayloads() {
        succeed(KEPT, "listed", ResultRetention.kept("{\"rows\":3}"));
        JobListing listing = new JobListing(STORE.layer);
        JobInfo brief = listing.list(KEPT, JobState.SUCCEEDED, JobListing.Filter.ALL, 1, false, null).jobs().get(0).info();
        assertEquals("listed", brief.id());
        assertNull(brief.result(), "a result only with fields=full");
        assertNotNull(brief.finishedAt());
        JobInfo full = listing.list(KEPT, JobState.SUCCEEDED, JobListing.Filter.ALL, 1, true, null).jobs().get(0).info();
        assertEquals("{\"rows\":3}", full.result());
    }

    @Test
    void anIdAckedTwiceInOneCallOnceByAStaleLeaseKeepsTheResult() {
        Partition p = store.partitionsOf(KEPT).get(0);
        Lease lease = taken("twice");
        // The lease that ran carries the result; a stale one of the same id (no result) comes after it.
        store.stageResult(lease, ResultRetention.kept("\"ran\""));
        assertEquals(List.of("twice"), store.ack(p, List.of(lease, new Lease("twice", "Z:1"))));
        assertEquals("\"ran\"", STORE.inspection.get(KEPT, "twice").orElseThrow().result());
    }

    @Test
    void aResultWithALineBreakIsKeptOnOneLineAndReadsBack() {
        succeed(KEPT, "nl", ResultRetention.kept("{\"a\":\n1,\r\n\"b\":\"x\\ny\"}"));
        assertEquals("{\"a\": 1,  \"b\":\"x\\ny\"}", STORE.inspection.get(KEPT, "nl").orElseThrow().result());
        JobInfo listed = new JobListing(STORE.layer).list(KEPT, JobState.SUCCEEDED, JobListing.Filter.ALL, 1, true, null)
                .jobs().get(0).info();
        assertEquals("nl", listed.id());
        assertEquals(1, listed.attempts());
    }

    @Test
    void forgettingATopicDeletesItsKeptSuccesses() {
        Partition p = store.partitionsOf(GONE).get(0);
        succeed(GONE, "g1", ResultRetention.kept("1"));
        assertEquals(TopicAdmin.Forgetting.Outcome.FORGOTTEN, STORE.topicAdmin.forget(GONE).outcome());
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0L, redis.num("EXISTS", STORE.keys.results(p)));
            assertEquals(0L, redis.num("EXISTS", STORE.keys.succeeded(p)));
        }
    }

    @Test
    void withoutACapTheAgeAloneTrimsMoreThanAnAckAdds() {
        JobQueue q = UNCAPPED.queue;
        Partition p = q.partitionsOf(AGED).get(0);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            ids.add("old" + i);
        }
        schedule(UNCAPPED, AGED, ids);
        q.ack(p, takeAll(UNCAPPED, p));
        try (Resp redis = HandBuiltStore.resp()) {
            long keptAt = (long) Double.parseDouble(redis.str("ZSCORE", UNCAPPED.keys.succeeded(p), "old0"));
            // Single acks until the 60 are past the retention (2 s); each re-arms the keys' expiry.
            int[] n = { 0 };
            Awaitility.await().pollInterval(Duration.ofMillis(200)).atMost(Duration.ofSeconds(60)).until(() -> {
                String id = "new" + n[0]++;
                schedule(UNCAPPED, AGED, List.of(id));
                q.ack(p, takeAll(UNCAPPED, p));
                List<Object> time = redis.list("TIME");
                return Long.parseLong(time.get(0).toString()) * 1000 + Long.parseLong(time.get(1).toString()) / 1000
                        > keptAt + 2000;
            });
            schedule(UNCAPPED, AGED, List.of("last"));
            q.ack(p, takeAll(UNCAPPED, p));
            // At most two acks ran past the retention: 2 x (1 + 16) under the cap's trim alone.
            for (String id : ids) {
                assertEquals(null, redis.call("ZSCORE", UNCAPPED.keys.succeeded(p), id), id + " trimmed by age");
            }
        }
    }
}
