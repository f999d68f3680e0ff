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

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.store.DeadSweep.Filter;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.vertx.redis.client.Response;

/**
 * deadsweep.lua called chunk by chunk: a walk in steps of a few members requeues or purges
 * exactly the matching dead jobs, members of one score included (its cursor skips those left and
 * never one not yet seen), leaves a job that dies between two steps alone, and a requeue moves
 * dead to scheduled in the same step; a filtered list stops at the number it may examine and
 * says so.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DeadSweepScriptsTest {
    @Inject
    DeadSweep sweep;

    @Test
    void aChunkedRequeueTakesExactlyTheMatchesAmongMembersOfOneScore() {
        String t = Topics.fresh("sweep-same");
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
        try (Resp redis = RedisTestResource.resp()) {
            Set<String> dead = new TreeSet<>(strings(redis.list("ZRANGE", Topics.keys(t) + "dead", "0", "-1")));
            assertEquals(new TreeSet<>(List.of("jb", "je", "jh", "jk", "other")), dead);
            for (String id : matches) {
                // scheduled: in a day shard, attempts reset, error cleared
                assertNull(redis.call("ZSCORE", Topics.keys(t) + "dead", id), id);
                String rec = redis.str("HGET", Topics.keys(t) + "jobs", id);
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
        String t = Topics.fresh("sweep-between");
        long asked = System.currentTimeMillis() - 1000;
        for (int i = 0; i < 6; i++) {
            bury(t, "old-" + i, "boom", asked - 6000 + i * 1000);
        }
        Partition p = new Partition(t, 0);
        Filter boom = new Filter("", "boom");
        Response first = sweep.step(DeadSweep.PURGE, p, "-inf", 0, asked, 2, boom);
        assertEquals(0, first.get(0).toInteger(), "not done after two of six");
        assertEquals(2, first.get(4).toInteger());
        // Between two steps: a job dies now (after the time the purge was asked at), and so does
        // one of those not reached yet, again.
        bury(t, "new", "boom", asked + 500);
        bury(t, "old-5", "boom", asked + 600);
        String from = first.get(1).toString();
        long kept = first.get(2).toLong();
        long purged = 2;
        for (int i = 0; i < 10; i++) {
            Response r = sweep.step(DeadSweep.PURGE, p, from, kept, asked, 2, boom);
            purged += r.get(4).toLong();
            if (r.get(0).toInteger() == 1) {
                break;
            }
            from = r.get(1).toString();
            kept = r.get(2).toLong();
        }
        assertEquals(5, purged, "old-0..old-4, not old-5 that died again, nor new");
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(new TreeSet<>(List.of("new", "old-5")),
                    new TreeSet<>(strings(redis.list("ZRANGE", Topics.keys(t) + "dead", "0", "-1"))));
            // record and dead-set entry went together
            assertEquals(2L, redis.num("HLEN", Topics.keys(t) + "jobs"));
        }
    }

    @Test
    void aPurgeByIdPrefixDeletesRecordAndEntryTogether() {
        String t = Topics.fresh("sweep-prefix");
        long at = System.currentTimeMillis() - 5000;
        for (int i = 0; i < 7; i++) {
            bury(t, (i % 2 == 0 ? "order-" : "user-") + i, "boom", at + i);
        }
        assertEquals(4, sweep.sweep(DeadSweep.PURGE, t, new Filter("order-", null), at + 100, 3));
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(new TreeSet<>(List.of("user-1", "user-3", "user-5")),
                    new TreeSet<>(strings(redis.list("ZRANGE", Topics.keys(t) + "dead", "0", "-1"))));
            assertEquals(new TreeSet<>(List.of("user-1", "user-3", "user-5")),
                    new TreeSet<>(strings(redis.list("HKEYS", Topics.keys(t) + "jobs"))));
        }
    }

    @Test
    void aFilteredListExaminesAtMostItsBoundAndSaysItStoppedThere() {
        String t = Topics.fresh("sweep-list");
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

    private static List<String> dueKeys(Resp redis, String t) {
        List<String> out = new ArrayList<>();
        for (String day : strings(redis.list("ZRANGE", Topics.keys(t) + "days", "0", "-1"))) {
            out.add(Topics.keys(t) + "due:" + day);
        }
        return out;
    }

    private static List<String> strings(List<Object> reply) {
        List<String> out = new ArrayList<>();
        reply.forEach(o -> out.add(String.valueOf(o)));
        return out;
    }

    private static void bury(String topic, String id, String error, long diedAt) {
        try (Resp redis = RedisTestResource.resp()) {
            redis.num("HSET", Topics.keys(topic) + "jobs", id, Long.toString(diedAt - 60_000, 36) + ",3,3," + error
                    + "\n{}");
            redis.num("ZADD", Topics.keys(topic) + "dead", Long.toString(diedAt), id);
        }
    }
}
