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

import io.delayq.core.IfExists;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * The findings of the first cold review of priorities (lanes), each on the real scripts: a lane job
 * put off by its group's rate limit is neither lost nor parked in the past and lnext keeps it in
 * sight; a take that stopped early serves no lower priority; a group starts its held jobs in
 * (priority, runAt) order; a lane entry an older release left behind is dropped, not leased.
 */
class PriorityReviewScriptsTest {
    private static final long DAY = 86_400_000L;
    /** group-max-in-flight 2 and group-rate-limit 1/s. */
    private static final String GROUP_RATE = HandBuiltStore.fresh("prv-grate");
    /** As GROUP_RATE, for a second test. */
    private static final String GROUP_RATE2 = HandBuiltStore.fresh("prv-grate2");
    /** group-rate-limit 1/s only. */
    private static final String RATE_ONLY = HandBuiltStore.fresh("prv-rate");
    /** max-in-flight 1. */
    private static final String CAPPED = HandBuiltStore.fresh("prv-cap");
    /** group-max-in-flight 2 only. */
    private static final String GROUPS = HandBuiltStore.fresh("prv-grp");
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics." + GROUP_RATE + ".group-max-in-flight", "2",
            "delayq.topics." + GROUP_RATE + ".group-rate-limit", "1",
            "delayq.topics." + GROUP_RATE2 + ".group-max-in-flight", "2",
            "delayq.topics." + GROUP_RATE2 + ".group-rate-limit", "1",
            "delayq.topics." + RATE_ONLY + ".group-rate-limit", "1",
            "delayq.topics." + GROUPS + ".group-max-in-flight", "2",
            "delayq.topics." + CAPPED + ".max-in-flight", "1");
    private final JobQueue store = STORE.queue;
    private final Set<Integer> older = new HashSet<>();
    private int token;

    private static NewJob grouped(String topic, String group, String id, long runAt, Integer priority) {
        return new NewJob(topic, id, false, runAt, 0, "{}", IfExists.KEEP, null, group, null, null, priority);
    }

    private TakeResult take(Partition p, int want) {
        return store.take(p, want, 30_000, "t" + (token++) + ":", older, List.of(), 0);
    }

    private static List<String> ids(TakeResult r) {
        return r.jobs().stream().map(j -> j.lease().id()).toList();
    }

    static String laneChar(int lane) {
        return switch (lane) {
            case 1 -> "+";
            case 2 -> "-";
            case 4 -> "8";
            default -> "9";
        };
    }

    /**
     * Moves a scheduled lane job (enqueued at runAt) out of its lane shard into gheld, as a take
     * that held it back leaves it, and drops lnext (no other lane job is scheduled).
     */
    static void holdBack(String topic, String group, String id, long runAt, int lane) {
        String k = HandBuiltStore.keysOf(topic);
        int code = Keys.laneCode(lane, Keys.dayOf(runAt));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(1, redis.num("ZREM", k + "due:" + code, id));
            redis.num("ZREM", k + "ldays", code);
            redis.num("DEL", k + "lnext");
            redis.num("ZADD", k + "gheld", "0",
                    group + "\0" + laneChar(lane) + String.format("%012d", runAt / 10) + "\0" + id);
        }
    }

    /** The lane shards (today's and tomorrow's of the lane) that hold id, with its score. */
    private static List<String> laneEntries(String topic, int lane, String id, long now) {
        String k = HandBuiltStore.keysOf(topic);
        List<String> out = new ArrayList<>();
        try (Resp redis = HandBuiltStore.resp()) {
            for (long at : new long[] { now - DAY, now, now + DAY }) {
                int code = Keys.laneCode(lane, Keys.dayOf(at));
                String score = redis.str("ZSCORE", k + "due:" + code, id);
                if (score != null) {
                    out.add(code + "@" + score);
                }
            }
        }
        return out;
    }

    /**
     * A held priority-1 job (heldId, due 5 s ago) of group g and a due priority-3 one (metId) of the
     * same group, below its limit (2), its rate pace 10 s ahead: a take meets metId, starts heldId
     * first, and the group's rate puts both off.
     */
    private void heldLaneJobBehindItsGroupsPace(String topic, Partition p, String g, String heldId, String metId, long now) {
        String k = HandBuiltStore.keysOf(topic);
        store.enqueue(p, List.of(grouped(topic, g, heldId, now - 5000, 1)), "");
        holdBack(topic, g, heldId, now - 5000, 1);
        store.enqueue(p, List.of(grouped(topic, g, metId, now - 1000, null)), "");
        try (Resp redis = HandBuiltStore.resp()) {
            redis.num("HSET", k + "groups", "", "2");
            redis.num("ZADD", k + "grouptat", Long.toString(now + 10_000), g); // the group's pace is ahead
        }
    }

    private static long scoreOf(String laneEntry) {
        return Long.parseLong(laneEntry.substring(laneEntry.indexOf('@') + 1));
    }

    /** Review #1: a held lane job its group's rate puts off, in a take given no shard of its lane. */
    @Test
    void aHeldLaneJobPutOffByItsGroupsRateIsNotLost() {
        String g = "g-" + System.nanoTime();
        Partition p = store.partitionOf(GROUP_RATE, "x", g);
        String k = HandBuiltStore.keysOf(GROUP_RATE);
        long now = System.currentTimeMillis();
        heldLaneJobBehindItsGroupsPace(GROUP_RATE, p, g, "h1", "p3", now);
        TakeResult r = take(p, 10);
        assertEquals(List.of(), ids(r), "both put off to the group's turns");
        List<String> at = laneEntries(GROUP_RATE, 1, "h1", now);
        assertEquals(1, at.size(), "h1 stays scheduled, in its lane: " + at);
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0, redis.num("ZCARD", k + "gheld"));
            long score = scoreOf(at.get(0));
            assertTrue(score > now, "at its turn, not before now: " + score);
            assertNotNull(redis.str("GET", k + "lnext"), "lnext bounds the put-off job");
            assertTrue(Long.parseLong(redis.str("GET", k + "lnext")) <= score);
        }
    }

    /** Review #2: a take that pulled no lane puts a lane job off into a lane shard: lnext follows. */
    @Test
    void aPutOffIntoALaneShardLowersLnext() {
        String g = "g-" + System.nanoTime();
        Partition p = store.partitionOf(GROUP_RATE2, "x", g);
        String k = HandBuiltStore.keysOf(GROUP_RATE2);
        long now = System.currentTimeMillis();
        heldLaneJobBehindItsGroupsPace(GROUP_RATE2, p, g, "h2", "q3", now);
        // The lane's shards are known to the taker already (learnt by an earlier take).
        older.add(Keys.laneCode(1, Keys.dayOf(now)));
        older.add(Keys.laneCode(1, Keys.dayOf(now + DAY)));
        TakeResult r = take(p, 10);
        assertEquals(List.of(), ids(r));
        List<String> at = laneEntries(GROUP_RATE2, 1, "h2", now);
        assertEquals(1, at.size(), "h2 put off in its lane: " + at);
        long score = scoreOf(at.get(0));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(Long.toString(score), redis.str("GET", k + "lnext"), "lnext is the put-off job's turn");
        }
        assertTrue(r.nextDue() <= score, "the taker is told to come back by then: " + r.nextDue());
    }

    /** Review #6: a lane job of yesterday put off by its group's rate is not parked in the past. */
    @Test
    void aLaneJobOfAnOlderDayPutOffGoesToItsTurnNotToThatDaysEnd() {
        String g = "g-" + System.nanoTime();
        Partition p = store.partitionOf(RATE_ONLY, "x", g);
        String k = HandBuiltStore.keysOf(RATE_ONLY);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(grouped(RATE_ONLY, g, "y1", now - DAY, 1)), "");
        try (Resp redis = HandBuiltStore.resp()) {
            redis.num("ZADD", k + "grouptat", Long.toString(now + 10_000), g);
        }
        for (int i = 0; i < 3; i++) {
            TakeResult r = take(p, 10);
            assertEquals(List.of(), ids(r));
            assertTrue(r.nextDue() > r.now(), "nothing due before the job's turn (no busy loop): " + r.nextDue());
        }
        List<String> at = laneEntries(RATE_ONLY, 1, "y1", now);
        assertEquals(1, at.size(), "y1 in its lane: " + at);
        long score = scoreOf(at.get(0));
        assertTrue(score > now, "at its turn: " + at);
    }
    /** Review #5: a take that looked at SCAN jobs of a lane takes nothing of a lower priority. */
    @Test
    void aTakeThatStoppedInALaneTakesNoLowerPriority() {
        String topic = HandBuiltStore.fresh("prv-scan");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        long expires = now + 1500;
        List<NewJob> jobs = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            jobs.add(new NewJob(topic, "x" + i, false, now - 5000, 0, "{}", IfExists.KEEP, null, null, null, expires, 1));
        }
        jobs.add(new NewJob(topic, "l1", false, now - 4000, 0, "{}", IfExists.KEEP, null, null, null, null, 1));
        jobs.add(new NewJob(topic, "p3", false, now - 3000, 0, "{}", IfExists.KEEP, null, null, null, null, null));
        store.enqueue(p, jobs, "");
        // The 1000 lane jobs ahead of l1 expire (awaited on the clock, Redis' being this host's).
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> System.currentTimeMillis() > expires + 200);
        List<String> order = new ArrayList<>();
        for (int i = 0; i < 10 && order.size() < 2; i++) {
            order.addAll(ids(take(p, 1)));
        }
        assertEquals(List.of("l1", "p3"), order, "the lane job first, though the first take met SCAN expired jobs");
    }

    /** Review #7: a group below its limit starts its held jobs in (priority, runAt) order. */
    @Test
    void aGroupsHeldJobOfALowerPriorityWaitsForItsDueHigherOne() {
        String g = "g-" + System.nanoTime();
        Partition p = store.partitionOf(GROUPS, "x", g);
        String k = HandBuiltStore.keysOf(GROUPS);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(grouped(GROUPS, g, "m5", now - 5000, 5)), "");
        holdBack(GROUPS, g, "m5", now - 5000, 5);
        store.enqueue(p, List.of(grouped(GROUPS, g, "l1", now - 1000, 1)), "");
        try (Resp redis = HandBuiltStore.resp()) {
            redis.num("HSET", k + "groups", "", "2");
        }
        TakeResult first = take(p, 1);
        assertEquals(List.of("l1"), ids(first), "priority 1 before the older held priority 5");
        store.ack(p, List.of(first.jobs().get(0).lease())); // releases m5
        assertEquals(List.of("m5"), ids(take(p, 1)));
    }

    /**
     * Replaces a record's runAt as text (base 36, up to its first ',' or newline), as a release before
     * priorities does (its with_run_at, and its encode): a priority prefix goes with the old runAt.
     */
    static String withRunAt(String rec, long runAt) {
        int end = 0;
        while (rec.charAt(end) != ',' && rec.charAt(end) != '\n') {
            end++;
        }
        return Long.toString(runAt, 36) + rec.substring(end);
    }

    /**
     * Review #3: a release before priorities reschedules (or replaces) a lane job: it rewrites the
     * record and puts the job into the plain shard, leaving the lane entry. The take drops that
     * entry instead of leasing the job before its new runAt, or twice.
     */
    @Test
    void aLaneEntryThatAnOlderReleaseLeftBehindIsDroppedNotLeased() {
        String topic = HandBuiltStore.fresh("prv-stale");
        Partition p = store.partitionsOf(topic).get(0);
        String k = HandBuiltStore.keysOf(topic);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(
                new NewJob(topic, "moved", false, now - 1000, 0, "{}", IfExists.KEEP, null, null, null, null, 1),
                new NewJob(topic, "replaced", false, now - 1000, 0, "{}", IfExists.KEEP, null, null, null, null, 1),
                new NewJob(topic, "twin", false, now - 1000, 0, "{}", IfExists.KEEP, null, null, null, null, 1),
                new NewJob(topic, "twin4", false, now - 1000, 0, "{}", IfExists.KEEP, null, null, null, null, 4)), "");
        long later = now + 60_000;
        int lane = Keys.laneCode(1, Keys.dayOf(now - 1000));
        try (Resp redis = HandBuiltStore.resp()) {
            // The old reschedule of "moved": its record at the new runAt (written anew: the priority
            // prefix goes, see withRunAt), a plain entry.
            String rec = redis.str("HGET", k + "jobs", "moved");
            redis.num("HSET", k + "jobs", "moved", withRunAt(rec, later));
            redis.num("ZADD", k + "due:" + Keys.dayOf(later), Long.toString(later), "moved");
            redis.num("ZADD", k + "days", Keys.dayOf(later), Keys.dayOf(later));
            // The old replace of "replaced": a new record without the priority, due now, a plain entry.
            String rep = redis.str("HGET", k + "jobs", "replaced");
            redis.num("HSET", k + "jobs", "replaced", withRunAt(rep, now - 500));
            redis.num("ZADD", k + "due:" + Keys.dayOf(now - 500), Long.toString(now - 500), "replaced");
            redis.num("ZADD", k + "days", Keys.dayOf(now - 500), Keys.dayOf(now - 500));
            // The old extend of "twin" to the runAt it had: its record as it was, a plain entry too.
            redis.num("ZADD", k + "due:" + Keys.dayOf(now - 1000), Long.toString(now - 1000), "twin");
            // And of "twin4", of lane 4: the plain days are pulled before it.
            redis.num("ZADD", k + "due:" + Keys.dayOf(now - 1000), Long.toString(now - 1000), "twin4");
            redis.num("ZADD", k + "days", Keys.dayOf(now - 1000), Keys.dayOf(now - 1000));
            redis.call("SET", k + "next", Long.toString(now - 1000));
        }
        List<String> taken = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            taken.addAll(ids(take(p, 10)));
        }
        assertEquals(List.of("twin", "twin4", "replaced"), taken,
                "each once (replaced from its plain entry); moved not before its new runAt");
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0, redis.num("EXISTS", k + "due:" + lane), "the stale lane entries went");
            assertEquals(0, redis.num("EXISTS", k + "due:" + Keys.laneCode(4, Keys.dayOf(now - 1000))));
            assertEquals(Long.toString(later), redis.str("ZSCORE", k + "due:" + Keys.dayOf(later), "moved"));
        }
    }
    /**
     * Review #3, a held job: an older release's reschedule of a held lane job does not find its
     * gheld member (it looks for a priority-3 one): it rewrites the record and adds a plain entry.
     * The member is dropped when met; the job runs once.
     */
    @Test
    void aHeldLaneJobThatAnOlderReleaseRescheduledRunsOnce() {
        String g = "g-" + System.nanoTime();
        Partition p = store.partitionOf(GROUPS, "x", g);
        String k = HandBuiltStore.keysOf(GROUPS);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(grouped(GROUPS, g, "hr", now - 5000, 1)), "");
        holdBack(GROUPS, g, "hr", now - 5000, 1);
        long moved = now - 3000;
        try (Resp redis = HandBuiltStore.resp()) {
            redis.num("HSET", k + "groups", "", "2");
            String rec = redis.str("HGET", k + "jobs", "hr");
            redis.num("HSET", k + "jobs", "hr", withRunAt(rec, moved));
            redis.num("ZADD", k + "due:" + Keys.dayOf(moved), Long.toString(moved), "hr");
            redis.num("ZADD", k + "days", Keys.dayOf(moved), Keys.dayOf(moved));
            redis.call("SET", k + "next", Long.toString(moved));
        }
        TakeResult r = take(p, 10);
        assertEquals(List.of("hr"), ids(r), "once");
        store.ack(p, List.of(r.jobs().get(0).lease()));
        assertEquals(List.of(), ids(take(p, 10)));
        try (Resp redis = HandBuiltStore.resp()) {
            assertTrue(redis.list("ZRANGE", k + "gheld", "0", "-1").stream().noneMatch(m -> m.toString().startsWith(g + "\0")),
                    "the stale member went");
        }
    }

    /** Review #4: a held lane job that an ack releases goes into its lane, not the plain shard. */
    @Test
    void aHeldLaneJobReleasedByAnAckGoesIntoItsLane() {
        String g = "g-" + System.nanoTime();
        Partition p = store.partitionOf(GROUPS, "x", g);
        String k = HandBuiltStore.keysOf(GROUPS);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(grouped(GROUPS, g, "r1", now - 3000, null), grouped(GROUPS, g, "r2", now - 2000, null)), "");
        TakeResult first = take(p, 10);
        assertEquals(List.of("r1", "r2"), ids(first), "the group at its limit");
        store.enqueue(p, List.of(grouped(GROUPS, g, "rl", now - 1000, 1), grouped(GROUPS, g, "r3", now - 1000, null)), "");
        assertEquals(List.of(), ids(take(p, 10)), "both held");
        store.ack(p, List.of(first.jobs().get(0).lease()));
        try (Resp redis = HandBuiltStore.resp()) {
            int today = Keys.dayOf(System.currentTimeMillis());
            assertNull(redis.str("ZSCORE", k + "due:" + today, "rl"), "not in the plain shard");
            assertNotNull(redis.str("ZSCORE", k + "due:" + Keys.laneCode(1, today), "rl"), "in its lane's shard of today");
        }
        assertEquals(List.of("rl"), ids(take(p, 10)), "the released lane job, the group at its limit again");
    }

    private static NewJob laneJob(String topic, String id, long runAt, int priority, IfExists ifExists) {
        return new NewJob(topic, id, false, runAt, 0, "{}", ifExists, null, null, null, null, priority);
    }

    /** Review #8: a partition holding only lane jobs is woken when a capped slot frees or it resumes. */
    @Test
    void aFreedSlotAndAResumeWakeAPartitionOfLaneJobsOnly() throws Exception {
        Partition p = store.partitionsOf(CAPPED).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(laneJob(CAPPED, "a", now - 2000, 1, IfExists.KEEP),
                laneJob(CAPPED, "b", now - 1000, 2, IfExists.KEEP)), "");
        TakeResult first = take(p, 10);
        assertEquals(List.of("a"), ids(first));
        assertTrue(first.capped(), "b is due, the cap holds it back");
        try (MaxInFlightScriptsTest.Subscriber sub = new MaxInFlightScriptsTest.Subscriber(STORE.keys.wakeChannel(p))) {
            store.ack(p, List.of(first.jobs().get(0).lease()));
            assertEquals(1, sub.published(), "the freed slot wakes the takers");
        }
        STORE.topicAdmin.pause(CAPPED);
        try (MaxInFlightScriptsTest.Subscriber sub = new MaxInFlightScriptsTest.Subscriber(STORE.keys.wakeChannel(p))) {
            STORE.topicAdmin.resume(CAPPED);
            assertEquals(1, sub.published(), "the resume wakes the takers");
        }
        assertEquals(List.of("b"), ids(take(p, 10)));
    }

    /** Review #9: a replace that moves a lane job earlier lowers lnext and wakes the takers. */
    @Test
    void aReplaceThatMovesALaneJobEarlierWakesTheTakers() throws Exception {
        String topic = HandBuiltStore.fresh("prv-wake");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(laneJob(topic, "j", now + 600_000, 1, IfExists.KEEP)), "");
        try (MaxInFlightScriptsTest.Subscriber sub = new MaxInFlightScriptsTest.Subscriber(STORE.keys.wakeChannel(p))) {
            store.enqueue(p, List.of(laneJob(topic, "j", now + 1000, 1, IfExists.REPLACE)), "");
            assertEquals(1, sub.published(), "lnext went down: the takers hear of it");
        }
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(Long.toString(now + 1000), redis.str("GET", HandBuiltStore.keysOf(topic) + "lnext"));
        }
    }

    /** Review #10: a taker keeps the shard codes of a backlog over many days of several lanes. */
    @Test
    void aTakerKeepsTheCodesOfABacklogOverManyDaysAndLanes() {
        String topic = HandBuiltStore.fresh("prv-older");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        List<NewJob> jobs = new ArrayList<>();
        for (int lane : new int[] { 1, 2, 4 }) {
            for (int d = 3; d < 35; d++) {
                jobs.add(laneJob(topic, "l" + lane + "-" + d, now - d * DAY, lane, IfExists.KEEP));
            }
        }
        store.enqueue(p, jobs, "");
        assertEquals(1, ids(take(p, 1)).size());
        assertEquals(96, older.size(), "32 days of three lanes, learnt once, kept: " + older.size());
        assertEquals(1, ids(take(p, 1)).size());
        assertEquals(96, older.size());
    }
}
