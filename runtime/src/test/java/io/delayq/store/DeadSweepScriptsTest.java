package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.store.DeadSweep.Filter;
import io.vertx.redis.client.Response;

/**
 * deadsweep.lua called chunk by chunk: a walk in steps of a few members requeues or purges
 * exactly the matching dead jobs, members of one score included (its cursor skips those left and
 * never one not yet seen), leaves a job that dies between two steps alone, and a requeue moves
 * dead to scheduled in the same step; a filtered list stops at the number it may examine and
 * says so; a member whose record is missing or unreadable is kept in every mode, and the cursor
 * (the last member left in place) misses no match when a member left in place goes between steps.
 */
class DeadSweepScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured();
    DeadSweep sweep = new DeadSweep(STORE.layer);

    @Test
    void aChunkedRequeueTakesExactlyTheMatchesAmongMembersOfOneScore() {
        String t = HandBuiltStore.fresh("sweep-same");
        long at = System.currentTimeMillis() - 10_000;
        // Eleven jobs dead at the same instant (a reclaim buries a batch in one call), interleaved
        // matches and others, and a few earlier and later ones.
        List<String> matches = new ArrayList<>();
        for (int i = 0; i < 11; i++) {
            String id = "j" + (char) ('a' + i);
            boolean match = i % 3 != 1;
            bury(t, id, match ? "Read timed out" : "HTTP 500", at);
            if (match) {
                matches.add(id);
            }
        }
        bury(t, "early", "timed out", at - 5000);
        bury(t, "other", "refused", at - 4000);
        bury(t, "late", "TIMED OUT", at + 5000);
        matches.add("early");
        matches.add("late");

        long n = sweep.sweep(DeadSweep.REQUEUE, t, new Filter(null, "timed out"), at + 6000, 2);

        assertEquals(matches.size(), n);
        try (Resp redis = HandBuiltStore.resp()) {
            Set<String> dead = new TreeSet<>(strings(redis.list("ZRANGE", HandBuiltStore.keysOf(t) + "dead", "0", "-1")));
            assertEquals(new TreeSet<>(List.of("jb", "je", "jh", "jk", "other")), dead);
            for (String id : matches) {
                // scheduled: in a day shard, attempts reset, error cleared
                assertNull(redis.call("ZSCORE", HandBuiltStore.keysOf(t) + "dead", id), id);
                String rec = redis.str("HGET", HandBuiltStore.keysOf(t) + "jobs", id);
                assertFalse(rec.contains("timed out") || rec.contains("TIMED"), rec);
                assertTrue(redis.num("EXISTS", dueKeys(redis, t).get(0)) == 1);
            }
            long scheduled = 0;
            for (String shard : dueKeys(redis, t)) {
                scheduled += redis.num("ZCARD", shard);
            }
            assertEquals(matches.size(), scheduled);
        }
    }

    @Test
    void aJobThatDiesBetweenTwoStepsIsLeftAlone() {
        String t = HandBuiltStore.fresh("sweep-between");
        long asked = System.currentTimeMillis() - 1000;
        for (int i = 0; i < 6; i++) {
            bury(t, "old-" + i, "boom", asked - 6000 + i * 1000);
        }
        Partition p = new Partition(t, 0);
        Filter boom = new Filter("", "boom");
        Response first = sweep.step(DeadSweep.PURGE, p, "-inf", "", asked, 2, boom);
        assertEquals(0, first.get(0).toInteger(), "not done after two of six");
        assertEquals(2, first.get(4).toInteger());
        // Between two steps: a job dies now (after the time the purge was asked at), and so does
        // one of those not reached yet, again.
        bury(t, "new", "boom", asked + 500);
        bury(t, "old-5", "boom", asked + 600);
        String from = first.get(1).toString();
        String after = first.get(2).toString();
        long purged = 2;
        for (int i = 0; i < 10; i++) {
            Response r = sweep.step(DeadSweep.PURGE, p, from, after, asked, 2, boom);
            purged += r.get(4).toLong();
            if (r.get(0).toInteger() == 1) {
                break;
            }
            from = r.get(1).toString();
            after = r.get(2).toString();
        }
        assertEquals(5, purged, "old-0..old-4, not old-5 that died again, nor new");
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(new TreeSet<>(List.of("new", "old-5")),
                    new TreeSet<>(strings(redis.list("ZRANGE", HandBuiltStore.keysOf(t) + "dead", "0", "-1"))));
            // record and dead-set entry went together
            assertEquals(2L, redis.num("HLEN", HandBuiltStore.keysOf(t) + "jobs"));
        }
    }

    @Test
    void aPurgeByIdPrefixDeletesRecordAndEntryTogether() {
        String t = HandBuiltStore.fresh("sweep-prefix");
        long at = System.currentTimeMillis() - 5000;
        for (int i = 0; i < 7; i++) {
            bury(t, (i % 2 == 0 ? "order-" : "user-") + i, "boom", at + i);
        }
        assertEquals(4, sweep.sweep(DeadSweep.PURGE, t, new Filter("order-", null), at + 100, 3));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(new TreeSet<>(List.of("user-1", "user-3", "user-5")),
                    new TreeSet<>(strings(redis.list("ZRANGE", HandBuiltStore.keysOf(t) + "dead", "0", "-1"))));
            assertEquals(new TreeSet<>(List.of("user-1", "user-3", "user-5")),
                    new TreeSet<>(strings(redis.list("HKEYS", HandBuiltStore.keysOf(t) + "jobs"))));
        }
    }

    @Test
    void aFilteredListExaminesAtMostItsBoundAndSaysItStoppedThere() {
        String t = HandBuiltStore.fresh("sweep-list");
        long at = System.currentTimeMillis() - 60_000;
        bury(t, "needle-old", "rare error", at);
        for (int i = 0; i < 30; i++) {
            bury(t, "hay-" + i, "common error", at + 1000 + i);
        }
        DeadSweep.Listing bounded = sweep.list(t, new Filter(null, "RARE"), 10, 12);
        assertTrue(bounded.truncated());
        assertTrue(bounded.jobs().isEmpty());

        DeadSweep.Listing all = sweep.list(t, new Filter(null, "rare"), 10, 100);
        assertFalse(all.truncated());
        assertEquals(List.of("needle-old"), all.jobs().stream().map(DeadJob::id).toList());
        assertEquals(at, all.jobs().get(0).diedAt());
        assertEquals("rare error", all.jobs().get(0).record().lastError());

        // Newest first, across chunks (of 500: here one), limit honoured, no truncation once limit is met.
        DeadSweep.Listing newest = sweep.list(t, new Filter("hay-", "common"), 3, 5);
        assertFalse(newest.truncated());
        assertEquals(List.of("hay-29", "hay-28", "hay-27"), newest.jobs().stream().map(DeadJob::id).toList());
        assertNotNull(newest.jobs().get(0).record());
    }

    @Test
    void aMemberWithoutARecordOrWithAnUnreadableOneIsKeptInEveryMode() {
        long at = System.currentTimeMillis() - 10_000;
        // The whole walk, in steps of two (b and d each end a step), requeues a and c and fails on
        // neither: no partial write, no error for the REST call to turn into a 500.
        String t = orphans("sweep-orphan", at);
        assertEquals(2, sweep.sweep(DeadSweep.REQUEUE, t, Filter.ALL, at + 100, 2));
        assertEquals(0, sweep.sweep(DeadSweep.PURGE, t, Filter.ALL, at + 100, 2));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(new TreeSet<>(List.of("b", "d")),
                    new TreeSet<>(strings(redis.list("ZRANGE", HandBuiltStore.keysOf(t) + "dead", "0", "-1"))));
            assertEquals("no newline", redis.str("HGET", HandBuiltStore.keysOf(t) + "jobs", "d"));
            assertNull(redis.str("HGET", HandBuiltStore.keysOf(t) + "jobs", "b"));
        }
        // Lists and counts, with and without an error filter, agree: a and c.
        String u = orphans("sweep-orphan-read", at);
        Filter boom = new Filter(null, "boom");
        assertEquals(2, sweep.count(u, Filter.ALL).matching());
        assertEquals(2, sweep.count(u, boom).matching());
        assertEquals(List.of("c", "a"), sweep.list(u, Filter.ALL, 10).jobs().stream().map(DeadJob::id).toList());
        assertEquals(List.of("c", "a"), sweep.list(u, boom, 10).jobs().stream().map(DeadJob::id).toList());
        assertEquals(0, sweep.sweep(DeadSweep.PURGE, u, new Filter("d", "boom"), at + 100, 2));
        assertEquals(2, sweep.sweep(DeadSweep.PURGE, u, boom, at + 100, 2));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(new TreeSet<>(List.of("b", "d")),
                    new TreeSet<>(strings(redis.list("ZRANGE", HandBuiltStore.keysOf(u) + "dead", "0", "-1"))));
        }
    }

    /** Dead a, b, c, d in that order; b has no record, d's cannot be read (no newline). */
    private static String orphans(String name, long at) {
        String t = HandBuiltStore.fresh(name);
        bury(t, "a", "boom", at);
        bury(t, "b", "boom", at + 1);
        bury(t, "c", "boom", at + 2);
        bury(t, "d", "boom", at + 3);
        try (Resp redis = HandBuiltStore.resp()) {
            redis.num("HDEL", HandBuiltStore.keysOf(t) + "jobs", "b");
            redis.num("HSET", HandBuiltStore.keysOf(t) + "jobs", "d", "no newline");
        }
        return t;
    }

    @Test
    void theCursorSkipsNoMatchWhenAMemberLeftInPlaceIsRemovedBetweenTwoSteps() {
        String t = HandBuiltStore.fresh("sweep-removed");
        long at = System.currentTimeMillis() - 10_000;
        Set<String> matches = new TreeSet<>(List.of("a2", "a3", "a5", "a7", "b1", "b3", "b5", "b7"));
        for (int i = 0; i < 9; i++) {
            bury(t, "a" + i, matches.contains("a" + i) ? "timeout" : "refused", at);
            bury(t, "b" + i, matches.contains("b" + i) ? "timeout" : "refused", at + 1);
        }
        Partition p = new Partition(t, 0);
        Filter timeout = new Filter(null, "timeout");
        Response first = sweep.step(DeadSweep.PURGE, p, "-inf", "", at + 10, 3, timeout);
        assertEquals(1, first.get(4).toInteger(), "a2 of a0..a2");
        assertEquals("a1", first.get(2).toString());
        // Between two steps a member left in place goes (a single purge of a0).
        try (Resp redis = HandBuiltStore.resp()) {
            redis.num("ZREM", HandBuiltStore.keysOf(t) + "dead", "a0");
            redis.num("HDEL", HandBuiltStore.keysOf(t) + "jobs", "a0");
        }
        String from = first.get(1).toString();
        String after = first.get(2).toString();
        long purged = 1;
        for (int i = 0; i < 20; i++) {
            Response r = sweep.step(DeadSweep.PURGE, p, from, after, at + 10, 3, timeout);
            purged += r.get(4).toLong();
            if (r.get(0).toInteger() == 1) {
                break;
            }
            from = r.get(1).toString();
            after = r.get(2).toString();
        }
        assertEquals(8, purged);
        try (Resp redis = HandBuiltStore.resp()) {
            Set<String> dead = new TreeSet<>(strings(redis.list("ZRANGE", HandBuiltStore.keysOf(t) + "dead", "0", "-1")));
            assertEquals(9, dead.size());
            dead.forEach(id -> assertFalse(matches.contains(id), id));
        }
        // Newest first too: a count or list over more members of one score than one call examines.
        String u = HandBuiltStore.fresh("sweep-run");
        try (Resp redis = HandBuiltStore.resp()) {
            for (int i = 0; i < 1100; i++) {
                String id = String.format("m%04d", i);
                redis.num("HSET", HandBuiltStore.keysOf(u) + "jobs", id, Long.toString(at - 60_000, 36) + ",3,3,"
                        + (i % 2 == 0 ? "timeout" : "refused") + "\n{}");
                redis.num("ZADD", HandBuiltStore.keysOf(u) + "dead", Long.toString(at), id);
            }
        }
        assertEquals(550, sweep.count(u, timeout).matching());
        assertEquals(1100, sweep.count(u, Filter.ALL).matching());
        assertEquals(550, sweep.list(u, timeout, 2000).jobs().size());
    }

    private static List<String> dueKeys(Resp redis, String t) {
        List<String> out = new ArrayList<>();
        for (String day : strings(redis.list("ZRANGE", HandBuiltStore.keysOf(t) + "days", "0", "-1"))) {
            out.add(HandBuiltStore.keysOf(t) + "due:" + day);
        }
        return out;
    }

    private static List<String> strings(List<Object> reply) {
        List<String> out = new ArrayList<>();
        reply.forEach(o -> out.add(String.valueOf(o)));
        return out;
    }

    private static void bury(String topic, String id, String error, long diedAt) {
        try (Resp redis = HandBuiltStore.resp()) {
            redis.num("HSET", HandBuiltStore.keysOf(topic) + "jobs", id, Long.toString(diedAt - 60_000, 36) + ",3,3," + error
                    + "\n{}");
            redis.num("ZADD", HandBuiltStore.keysOf(topic) + "dead", Long.toString(diedAt), id);
        }
    }
}
