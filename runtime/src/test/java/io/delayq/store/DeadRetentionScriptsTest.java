package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.JobRequest;
import io.delayq.core.JobValidator;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * The dead set's retention in the scripts: a burial over the cap (by a failed attempt or by a
 * reclaim) removes the partition's oldest dead jobs in the same step, records and all, and says
 * which; a dead callback already queued is still there; each partition keeps its share of the
 * cap; the sweep removes dead jobs and failed callbacks past the age, and what a lowered cap left
 * over. And a dead-job callback's key is unique: a job that dies twice in one Redis millisecond
 * gets a second callback instead of overwriting the first.
 */
class DeadRetentionScriptsTest {
    static final String CAPPED = HandBuiltStore.fresh("dead-cap");
    static final String RECLAIMED = HandBuiltStore.fresh("dead-cap-reclaim");
    static final String AGED = HandBuiltStore.fresh("dead-age");
    static final String SHARED = HandBuiltStore.fresh("dead-cap-shared");
    static final String TWICE = HandBuiltStore.fresh("dead-twice");
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics." + CAPPED + ".dead.max-jobs", "50",
            "delayq.topics." + CAPPED + ".dead-url", "http://127.0.0.1:9/dead",
            "delayq.topics." + RECLAIMED + ".dead.max-jobs", "2",
            "delayq.topics." + AGED + ".dead.max-age", "1h",
            "delayq.topics." + AGED + ".dead.max-jobs", "0",
            "delayq.topics." + TWICE + ".dead-url", "http://127.0.0.1:9/dead");
    private static final HandBuiltStore FOUR = HandBuiltStore.configured("delayq.partitions", "4",
            "delayq.prefix", "dq4", "delayq.topics." + SHARED + ".dead.max-jobs", "10");
    private static final List<String> TRIMMED = new CopyOnWriteArrayList<>();
    static {
        STORE.layer.onDeadTrimmed((topic, ids) -> ids.forEach(id -> TRIMMED.add(topic + "/" + id)));
    }
    JobQueue store = STORE.queue;

    /** Enqueues jobs due now as {@code Jobs.schedule} writes them, each into its partition. */
    private static void schedule(HandBuiltStore s, String topic, List<String> ids) {
        JobValidator validator = new JobValidator(s.config, new RedisClock());
        for (String id : ids) {
            NewJob job = validator.validate(JobRequest.topic(topic).id(id).delay(Duration.ZERO), new ObjectMapper());
            s.queue.enqueue(s.queue.partitionOf(topic, id, null), List.of(job), "");
        }
    }

    /** Takes every due job of the partition and fails each for good, in the order taken. */
    private static List<String> killAll(HandBuiltStore s, Partition p) {
        List<String> died = new ArrayList<>();
        TakeResult r = s.queue.take(p, 1000, 30_000, "A:", new HashSet<>(), List.of(), 0);
        for (TakenJob j : r.jobs()) {
            s.queue.fail(p, j.lease(), 0, "poison", 3, true);
            died.add(j.lease().id());
        }
        return died;
    }

    @Test
    void a120JobsDyingOnATopicWithMaxJobs50Keep50TheNewestWithTheirCallbacks() {
        Partition p = store.partitionsOf(CAPPED).get(0);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            ids.add(String.format("j%03d", i));
        }
        schedule(STORE, CAPPED, ids);
        List<String> died = killAll(STORE, p);
        assertEquals(120, died.size());
        String k = HandBuiltStore.keysOf(CAPPED);
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(50L, redis.num("ZCARD", k + "dead"));
            Set<String> kept = new HashSet<>(strings(redis.list("ZRANGE", k + "dead", "0", "-1")));
            assertEquals(new HashSet<>(died.subList(70, 120)), kept, "the 50 that died last");
            for (String gone : died.subList(0, 70)) {
                assertNull(redis.str("HGET", k + "jobs", gone), "a trimmed job's record goes with it");
                assertTrue(TRIMMED.contains(CAPPED + "/" + gone), "reported: " + gone);
            }
            assertEquals(50L, redis.num("HLEN", k + "jobs"));
            assertEquals(120L, redis.num("ZCARD", k + "callbacks"), "every queued dead callback is still delivered");
        }
        assertEquals(70, TRIMMED.stream().filter(t -> t.startsWith(CAPPED + "/")).count());
    }

    @Test
    void aReclaimThatBuriesOverTheCapTrimsAsAFailureDoes() {
        Partition p = store.partitionsOf(RECLAIMED).get(0);
        schedule(STORE, RECLAIMED, List.of("r1", "r2", "r3", "r4"));
        store.take(p, 10, 1, "A:", new HashSet<>(), List.of(), 0); // 1 ms leases: their replica "died"
        try (Resp redis = HandBuiltStore.resp()) {
            org.awaitility.Awaitility.await().until(() -> redis.num("ZCOUNT", HandBuiltStore.keysOf(RECLAIMED) + "inflight",
                    "-inf", Long.toString(nowMs(redis) - 1)) == 4);
            int[] r = store.reclaim(p, 100, 10, 1, List.of(), 0, 0, 1.0, 0, 0);
            assertEquals(4, r[1], "one lost attempt of 1 allowed: dead");
            assertEquals(2L, redis.num("ZCARD", HandBuiltStore.keysOf(RECLAIMED) + "dead"));
            assertEquals(2L, redis.num("HLEN", HandBuiltStore.keysOf(RECLAIMED) + "jobs"));
        }
        assertEquals(2, TRIMMED.stream().filter(t -> t.startsWith(RECLAIMED + "/")).count());
    }

    @Test
    void eachPartitionKeepsItsShareOfTheCapRoundedUp() {
        String topic = SHARED;
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 80; i++) {
            ids.add("s" + i);
        }
        schedule(FOUR, topic, ids);
        for (Partition p : FOUR.queue.partitionsOf(topic)) {
            killAll(FOUR, p);
        }
        try (Resp redis = HandBuiltStore.resp()) {
            for (Partition p : FOUR.queue.partitionsOf(topic)) {
                long dead = redis.num("ZCARD", FOUR.keys.dead(p));
                assertEquals(3L, dead, "10 / 4 partitions, rounded up, in " + p);
            }
        }
    }

    @Test
    void theSweepRemovesDeadJobsAndFailedCallbacksPastTheAgeAndWhatALoweredCapLeft() {
        Partition p = store.partitionsOf(AGED).get(0);
        schedule(STORE, AGED, List.of("old1", "old2", "new1"));
        killAll(STORE, p);
        String k = HandBuiltStore.keysOf(AGED);
        DeadSweep sweep = new DeadSweep(STORE.layer);
        try (Resp redis = HandBuiltStore.resp()) {
            long twoHoursAgo = nowMs(redis) - 7_200_000;
            redis.call("ZADD", k + "dead", "XX", Long.toString(twoHoursAgo), "old1");
            redis.call("ZADD", k + "dead", "XX", Long.toString(twoHoursAgo + 1), "old2");
            redis.call("ZADD", k + "cbfailed", Long.toString(twoHoursAgo), "1:gone", Long.toString(twoHoursAgo + 7_000_000),
                    "2:kept");
            redis.call("HSET", k + "cbdata", "1:gone", "3,1,x\n{}", "2:kept", "3,2,x\n{}");

            assertEquals(2, sweep.trim(AGED));

            assertEquals(List.of("new1"), strings(redis.list("ZRANGE", k + "dead", "0", "-1")));
            assertNull(redis.str("HGET", k + "jobs", "old1"));
            assertNotNull(redis.str("HGET", k + "jobs", "new1"));
            assertEquals(List.of("2:kept"), strings(redis.list("ZRANGE", k + "cbfailed", "0", "-1")));
            assertNull(redis.str("HGET", k + "cbdata", "1:gone"));
            assertEquals(0, sweep.trim(AGED), "nothing more");
        }
        // A cap lowered under what a partition holds: the sweep brings it down, not only the next deaths.
        String lowered = HandBuiltStore.fresh("dead-lowered");
        Partition q = store.partitionsOf(lowered).get(0);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            ids.add("l" + i);
        }
        schedule(STORE, lowered, ids);
        killAll(STORE, q);
        HandBuiltStore cut = HandBuiltStore.configured("delayq.topics." + lowered + ".dead.max-jobs", "5");
        assertEquals(25, new DeadSweep(cut.layer).trim(lowered));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(5L, redis.num("ZCARD", HandBuiltStore.keysOf(lowered) + "dead"));
            assertFalse(redis.num("HLEN", HandBuiltStore.keysOf(lowered) + "jobs") > 5);
        }
    }

    @Test
    void aJobThatDiesAgainInTheSameMillisecondGetsACallbackOfItsOwn() {
        Partition p = store.partitionsOf(TWICE).get(0);
        String k = HandBuiltStore.keysOf(TWICE);
        schedule(STORE, TWICE, List.of("twice"));
        try (Resp redis = HandBuiltStore.resp()) {
            // The first death's callback, still pending, at every millisecond the second one can
            // fall on (the next few seconds by Redis' clock).
            long now = nowMs(redis);
            List<String> hset = new ArrayList<>(List.of("HSET", k + "cbdata"));
            for (long ms = now; ms < now + 10_000; ms++) {
                hset.add(ms + ":twice");
                hset.add("0," + ms + ",\nfirst death");
            }
            redis.call(hset.toArray(String[]::new));
            killAll(STORE, p);
            List<String> members = strings(redis.list("ZRANGE", k + "callbacks", "0", "-1"));
            assertEquals(1, members.size(), members.toString());
            String member = members.get(0);
            assertTrue(member.matches("\\d+\\.2:twice"), "a key of its own: " + member);
            String first = member.substring(0, member.indexOf('.')) + ":twice";
            assertTrue(redis.str("HGET", k + "cbdata", first).endsWith("first death"), "the first callback is kept");
            assertTrue(redis.str("HGET", k + "cbdata", member).contains("\"twice\"") || redis.str("HGET", k + "cbdata",
                    member).contains("poison"), "the second one's own record");
            assertEquals("twice", DeadCallbackStore.DeadCallback.parse(p, member, redis.str("HGET", k + "cbdata", member)).id());
        }
    }

    private static List<String> strings(List<Object> reply) {
        List<String> out = new ArrayList<>();
        reply.forEach(o -> out.add(String.valueOf(o)));
        return out;
    }

    private static long nowMs(Resp redis) {
        List<Object> t = redis.list("TIME");
        return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000;
    }
}
