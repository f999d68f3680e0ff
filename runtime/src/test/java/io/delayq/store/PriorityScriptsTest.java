package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * Priorities in the scripts (lib.lua's lanes): of a partition's due jobs a higher priority is
 * always taken first, across lanes and days, never before its runAt; a job keeps its lane through
 * every move; a group starts its jobs in (priority, runAt) order; caps, rate limits and pauses
 * apply as before; a topic that never uses priorities keeps today's layout.
 */
class PriorityScriptsTest {
    private static final long DAY = 86_400_000L;
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics.prio-grp.group-max-in-flight", "1",
            "delayq.topics.prio-cap.max-in-flight", "1",
            "delayq.topics.prio-rate.rate-limit", "1");
    private final JobQueue store = STORE.queue;
    private final Inspection inspection = STORE.inspection;
    private final Set<Integer> older = new HashSet<>();
    private int token;

    private static NewJob job(String topic, String id, long runAt, Integer priority) {
        return new NewJob(topic, id, false, runAt, 0, "{}", IfExists.KEEP, null, null, null, null, priority);
    }

    private static NewJob grouped(String topic, String group, String id, long runAt, Integer priority) {
        return new NewJob(topic, id, false, runAt, 0, "{}", IfExists.KEEP, null, group, null, null, priority);
    }

    private List<TakenJob> take(Partition p, int want, Lease... acks) {
        return store.take(p, want, 30_000, "t" + (token++) + ":", older, List.of(acks), 0).jobs();
    }

    private static List<String> ids(List<TakenJob> jobs) {
        return jobs.stream().map(j -> j.lease().id()).toList();
    }

    /** The ids taken one take at a time, one job each, until none is due. */
    private List<String> takeAllOneByOne(Partition p) {
        List<String> order = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            List<TakenJob> got = take(p, 1);
            if (got.isEmpty()) {
                return order;
            }
            order.add(got.get(0).lease().id());
        }
        return order;
    }

    private static String record(Partition p, String id) {
        try (Resp redis = HandBuiltStore.resp()) {
            return redis.str("HGET", HandBuiltStore.keysOf(p.topic()) + "jobs", id);
        }
    }

    @Test
    void aHigherPriorityIsAlwaysTakenFirstAcrossLanesAndDays() {
        String topic = HandBuiltStore.fresh("prio-order");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(
                job(topic, "p5-old", now - 2 * DAY, 5),
                job(topic, "p3-old", now - 2 * DAY, null),
                job(topic, "p4", now - 1000, 4),
                job(topic, "p3", now - 1000, 3),
                job(topic, "p2", now - 500, 2),
                job(topic, "p1-late", now - 10, 1),
                job(topic, "p1-old", now - 3 * DAY, 1),
                job(topic, "p1-future", now + 3_600_000, 1)), "");
        assertEquals(List.of("p1-old", "p1-late", "p2", "p3-old", "p3", "p4", "p5-old"), takeAllOneByOne(p));
        assertEquals(JobState.SCHEDULED, inspection.get(topic, "p1-future").orElseThrow().state(), "never before its runAt");
    }

    /**
     * A take reads the lanes' days in one read of ldays (up to 32 codes, lane 1's first): lane 1 jobs
     * on 140 future days fill it, and the later lanes' due days are read on their own, not missed.
     */
    @Test
    void aLaneWithManyFutureDaysDoesNotHideTheLaterLanesDueJobs() {
        String topic = HandBuiltStore.fresh("prio-ldays");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        List<NewJob> jobs = new ArrayList<>();
        for (int d = 1; d <= 140; d++) {
            jobs.add(job(topic, "f1-" + d, now + d * DAY, 1));
            jobs.add(job(topic, "f2-" + d, now + d * DAY, 2));
        }
        jobs.addAll(List.of(job(topic, "p1", now - 50, 1), job(topic, "p2", now - 40, 2), job(topic, "p3", now - 30, null),
                job(topic, "p4-old", now - DAY, 4), job(topic, "p4", now - 20, 4), job(topic, "p5", now - 10, 5)));
        store.enqueue(p, jobs, "");
        assertEquals(List.of("p1", "p2", "p3", "p4-old", "p4", "p5"), ids(take(p, 10)));
        assertEquals(List.of(), ids(take(p, 10)));
    }

    @Test
    void aBatchTakeFillsFromTheHighestLaneDown() {
        String topic = HandBuiltStore.fresh("prio-batch");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        List<NewJob> jobs = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            jobs.add(job(topic, "low" + i, now - 1000 + i, 5));
            jobs.add(job(topic, "mid" + i, now - 1000 + i, null));
            jobs.add(job(topic, "top" + i, now - 10 + i, 1));
        }
        store.enqueue(p, jobs, "");
        assertEquals(List.of("top0", "top1", "top2", "top3", "top4", "mid0", "mid1"), ids(take(p, 7)));
        assertEquals(List.of("mid2", "mid3", "mid4", "low0", "low1", "low2", "low3", "low4"), ids(take(p, 20)));
    }

    @Test
    void aTopicWithoutPrioritiesKeepsTodaysLayoutAndANewJobWritesNoMark() {
        String topic = HandBuiltStore.fresh("prio-none");
        Partition p = store.partitionsOf(topic).get(0);
        store.enqueue(p, List.of(job(topic, "a", System.currentTimeMillis() - 5, null), job(topic, "b", System.currentTimeMillis(), 3)), "");
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertEquals(0, redis.num("EXISTS", k + "ldays", k + "lnext"));
            assertEquals(-1, record(p, "b").indexOf('\u001a'), "priority 3 costs no byte");
        }
        assertEquals(List.of("a", "b"), takeAllOneByOne(p));
    }

    @Test
    void aJobKeepsItsLaneThroughRetrySnoozeReclaimRequeueAndRevive() {
        String topic = HandBuiltStore.fresh("prio-kept");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(new NewJob(topic, "hi", false, now - 5, 2, "{}", IfExists.KEEP, null, null, null, null, 1)), "");
        // A due priority-3 job that was there first, before every step: the lane-1 job goes first.
        int n = 0;
        TakenJob hi = take(p, 1).get(0);
        assertEquals("hi", hi.lease().id());
        assertEquals(1, hi.record().priority());

        store.enqueue(p, List.of(job(topic, "plain" + n++, now - 60_000, null)), "");
        assertEquals(FailOutcome.Kind.RETRY, store.fail(p, hi.lease(), 0, "boom", 5).kind());
        hi = take(p, 1).get(0);
        assertEquals("hi", hi.lease().id(), "first after a retry");

        assertTrue(store.snooze(p, hi.lease(), false, 0).isPresent());
        // Taken under a lease of 1 ms: it lapses, and a reclaim runs the job again.
        hi = store.take(p, 1, 1, "t" + (token++) + ":", older, List.of(), 0).jobs().get(0);
        assertEquals("hi", hi.lease().id(), "first after a snooze");
        Awaitility.await().atMost(Duration.ofSeconds(30))
                .until(() -> store.reclaim(p, 100, 10, 3, List.of(), 0, 0, 1.0, 0, 0)[0] == 1);
        hi = take(p, 1).get(0);
        assertEquals("hi", hi.lease().id(), "first after a lost attempt's rerun");

        assertEquals(1, store.requeue(p, List.of(hi.lease())));
        hi = take(p, 1).get(0);
        assertEquals("hi", hi.lease().id(), "first after a drain's requeue");

        assertEquals(FailOutcome.Kind.DEAD, store.fail(p, hi.lease(), 0, "last", 2).kind());
        assertTrue(inspection.revive(topic, "hi").isPresent());
        assertEquals(List.of("hi", "plain0"), takeAllOneByOne(p), "first after a revive");
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0, redis.num("EXISTS", HandBuiltStore.keysOf(topic) + "ldays"), "the emptied lane's day went");
        }
    }

    @Test
    void replaceAndExtendKeepTheStoredPriorityUnlessTheyGiveOne() {
        String topic = HandBuiltStore.fresh("prio-replace");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(job(topic, "a", now - 100, 1), job(topic, "b", now - 200, 5), job(topic, "c", now - 300, null)), "");
        // a: replaced without a priority (stays 1); b: extended with priority 2; c: replaced with 5.
        store.enqueue(p, List.of(
                new NewJob(topic, "a", false, now - 50, 0, "{}", IfExists.REPLACE, null, null, null, null, null),
                new NewJob(topic, "b", false, now - 400, 0, "{}", IfExists.EXTEND, null, null, null, null, 2),
                new NewJob(topic, "c", false, now - 300, 0, "{}", IfExists.REPLACE, null, null, null, null, 5)), "");
        assertEquals(1, JobRecord.decode(record(p, "a")).priority());
        assertEquals(2, JobRecord.decode(record(p, "b")).priority());
        assertEquals(5, JobRecord.decode(record(p, "c")).priority());
        assertEquals(List.of("a", "b", "c"), takeAllOneByOne(p));
    }

    @Test
    void cancelRescheduleListAndStatsSeeTheLanes() {
        String topic = HandBuiltStore.fresh("prio-inspect");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(job(topic, "x", now - 100, 1), job(topic, "y", now - 100, 5), job(topic, "z", now - 100, null),
                job(topic, "w", now + 3_600_000, 2)), "");
        assertEquals(3L, inspection.gauges(topic)[4], "the due count covers the lanes");
        JobListing.Page page = new JobListing(STORE.layer).list(topic, JobState.SCHEDULED,
                new JobListing.Filter(null, null, null, null), 10, false, null);
        assertEquals(Set.of("x", "y", "z", "w"), Set.copyOf(page.jobs().stream().map(l -> l.info().id()).toList()));
        assertEquals(io.delayq.core.CancelOutcome.CANCELLED, inspection.cancel(topic, "x"));
        assertTrue(inspection.reschedule(topic, "w", false, now - 10).rescheduled());
        assertEquals(List.of("w", "z", "y"), takeAllOneByOne(p));
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertEquals(0, redis.num("EXISTS", k + "ldays", k + "lnext"), "no lane left, nor its bound");
        }
    }

    @Test
    void aGroupStartsItsJobsInPriorityThenRunAtOrder() {
        String topic = "prio-grp";
        String g = "g-" + System.nanoTime();
        Partition p = store.partitionOf(topic, "x", g);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(
                grouped(topic, g, "g3a", now - 5000, null),
                grouped(topic, g, "g5", now - 6000, 5),
                grouped(topic, g, "g3b", now - 4000, 3),
                grouped(topic, g, "g1", now - 1000, 1),
                grouped(topic, g, "g2", now - 2000, 2)), "");
        List<TakenJob> first = take(p, 10);
        assertEquals(List.of("g1"), ids(first), "one at a time, the highest first; the rest held");
        List<String> order = new ArrayList<>(List.of("g1"));
        Lease last = first.get(0).lease();
        for (int i = 0; i < 4; i++) {
            List<TakenJob> next = take(p, 10, last);
            assertEquals(1, next.size(), "the ack released the group's next job: " + order);
            order.add(next.get(0).lease().id());
            last = next.get(0).lease();
        }
        assertEquals(List.of("g1", "g2", "g3a", "g3b", "g5"), order);
        store.ack(p, List.of(last));
    }

    @Test
    void aCapAndARateLimitAndAPauseApplyToTheLanesAsBefore() {
        long now = System.currentTimeMillis();
        String capped = "prio-cap";
        Partition c = store.partitionsOf(capped).get(0);
        store.enqueue(c, List.of(job(capped, "c5", now - 10, 5), job(capped, "c1", now - 10, 1)), "");
        List<TakenJob> one = take(c, 10);
        assertEquals(List.of("c1"), ids(one), "the cap of 1: the highest");
        assertEquals(List.of(), ids(take(c, 10)), "nothing more while it runs");
        assertEquals(List.of("c5"), ids(take(c, 10, one.get(0).lease())));

        String rated = "prio-rate";
        Partition r = store.partitionsOf(rated).get(0);
        store.enqueue(r, List.of(job(rated, "r5", now - 10, 5), job(rated, "r3", now - 10, null), job(rated, "r1", now - 10, 1)), "");
        assertEquals(List.of("r1"), ids(take(r, 10)), "one job per second: the highest");
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> !take(r, 10).isEmpty());
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> !take(r, 10).isEmpty());
        assertEquals(0, inspection.gauges(rated)[4]);

        String paused = HandBuiltStore.fresh("prio-pause");
        Partition q = store.partitionsOf(paused).get(0);
        store.enqueue(q, List.of(job(paused, "q1", now - 10, 1)), "");
        STORE.topicAdmin.pause(paused);
        assertEquals(List.of(), ids(take(q, 10)), "paused");
        STORE.topicAdmin.resume(paused);
        assertEquals(List.of("q1"), ids(take(q, 10)));
    }

    @Test
    void aDeadSweepRequeuesIntoTheLaneAndTheDashboardReadSeesTheLanes() {
        String topic = HandBuiltStore.fresh("prio-sweep");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(new NewJob(topic, "d1", false, now - 100, 1, "{}", IfExists.KEEP, null, null, null, null, 1),
                job(topic, "p3", now - 1000, null), job(topic, "p5", now + 3_600_000, 5)), "");
        TakenJob d1 = take(p, 1).get(0);
        assertEquals("d1", d1.lease().id());
        assertEquals(FailOutcome.Kind.DEAD, store.fail(p, d1.lease(), 0, "boom", 1).kind());
        assertEquals(1, new DeadSweep(STORE.layer).requeue(topic, new DeadSweep.Filter(null, null)));
        TopicSnapshot snap = inspection.peek(topic, 60_000, 120, 10, 10);
        assertEquals(2, snap.dueNow(), "the lane's due job counted");
        assertEquals(List.of("p3", "d1", "p5"), snap.next().stream().map(TopicSnapshot.Scheduled::id).toList(),
                "the next jobs by runAt, the lanes' among them");
        assertEquals(1L, java.util.Arrays.stream(snap.timeline()).sum(), "the lane-5 job in the timeline");
        assertEquals(List.of("d1", "p3"), takeAllOneByOne(p), "revived into its lane: first");
    }

    @Test
    void theSafetyNetPollSeesALaneJob() {
        String topic = HandBuiltStore.fresh("prio-poll");
        Partition p = store.partitionsOf(topic).get(0);
        long runAt = System.currentTimeMillis() + 60_000;
        store.enqueue(p, List.of(job(topic, "later", runAt, 4)), "");
        assertEquals(runAt, STORE.gateway.await(store.headsAsync(List.of(p)).get(0)).next());
    }

    @Test
    void aLaneJobThatAnOlderReleaseLeftInThePlainShardIsFoundThereAndAnOldMemberIsPriorityThree() {
        String topic = HandBuiltStore.fresh("prio-old");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(job(topic, "moved", now - 100, null), job(topic, "other", now - 50, null)), "");
        // As a release before priorities leaves a lane job it snoozed: the mark in the record (kept
        // as error text), the job in the plain shard.
        String rec = record(p, "moved");
        int nl = rec.indexOf('\n');
        try (Resp redis = HandBuiltStore.resp()) {
            redis.num("HSET", HandBuiltStore.keysOf(topic) + "jobs", "moved", rec.substring(0, nl) + ",0,0,\u001a1\u001a" + rec.substring(nl));
        }
        assertEquals(1, JobRecord.decode(record(p, "moved")).priority());
        assertEquals(io.delayq.core.CancelOutcome.CANCELLED, inspection.cancel(topic, "moved"));
        assertTrue(inspection.get(topic, "moved").isEmpty());
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(List.of("other"), redis.list("ZRANGE", HandBuiltStore.keysOf(topic) + "due:" + Keys.dayOf(now), "0", "-1"));
        }
        JobInfo other = inspection.get(topic, "other").orElseThrow();
        assertEquals(JobState.SCHEDULED, other.state());
    }
}
