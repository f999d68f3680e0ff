package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * A take keeps "next" (the plain days) and "lnext" (the lanes) without looking them up again when it
 * did not take from their shards, or stopped in a lane that still holds due jobs: what it keeps must
 * stay a lower bound of every job left (the safety-net poll and the wake-ups rely on it), and a take
 * that may have left nothing due still looks them up, so that its taker does not come back for
 * nothing.
 */
class PriorityNextBoundTest {
    private static final long DAY = 86_400_000L;
    private static final String GROUPS = HandBuiltStore.fresh("pnb-grp");
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics." + GROUPS + ".group-max-in-flight", "1");
    private final JobQueue store = STORE.queue;
    private final Set<Integer> older = new HashSet<>();
    private int token;

    private static NewJob job(String topic, String id, long runAt, Integer priority) {
        return new NewJob(topic, id, false, runAt, 0, "{}", IfExists.KEEP, null, null, null, null, priority);
    }

    private TakeResult take(Partition p, int want) {
        return store.take(p, want, 30_000, "b" + (token++) + ":", older, List.of(), 0);
    }

    /** The earliest score over the topic's plain shards (lanes: its lane shards), Long.MAX_VALUE when none. */
    private static long earliest(Resp redis, String topic, boolean lanes) {
        String k = HandBuiltStore.keysOf(topic);
        long best = Long.MAX_VALUE;
        for (Object key : redis.list("KEYS", k + "due:*")) {
            String code = key.toString().substring((k + "due:").length());
            if ((code.length() > 8) != lanes) {
                continue;
            }
            List<Object> top = redis.list("ZRANGE", key, "0", "0", "WITHSCORES");
            if (!top.isEmpty()) {
                best = Math.min(best, (long) Double.parseDouble(top.get(1).toString()));
            }
        }
        return best;
    }

    /** next and lnext are each a lower bound of the jobs left on their side, and so is the reply's next. */
    private static void assertBounds(String topic, TakeResult r, String when) {
        String k = HandBuiltStore.keysOf(topic);
        try (Resp redis = HandBuiltStore.resp()) {
            long plain = earliest(redis, topic, false), lanes = earliest(redis, topic, true);
            String next = redis.str("GET", k + "next"), lnext = redis.str("GET", k + "lnext");
            if (plain != Long.MAX_VALUE) {
                assertNotNull(next, "next erased while plain jobs are left, " + when);
                assertTrue(Long.parseLong(next) <= plain, "next " + next + " above a plain job's runAt " + plain + ", " + when);
            }
            if (lanes != Long.MAX_VALUE) {
                assertNotNull(lnext, "lnext erased while lane jobs are left, " + when);
                assertTrue(Long.parseLong(lnext) <= lanes, "lnext " + lnext + " above a lane job's runAt " + lanes + ", " + when);
            }
            long left = Math.min(plain, lanes);
            if (left != Long.MAX_VALUE) {
                assertTrue(r.nextDue() >= 0 && r.nextDue() <= left, "the reply's next " + r.nextDue() + " above " + left + ", " + when);
            }
        }
    }

    /**
     * Jobs of every priority on past days, today (due and not) and tomorrow, taken by takes of random
     * sizes: after each, next, lnext and the reply bound every job left from below.
     */
    @Test
    void everyTakeLeavesNextAndLnextBelowEveryJobLeft() {
        Random random = new Random(33);
        for (int round = 0; round < 6; round++) {
            String topic = HandBuiltStore.fresh("pnb-mix");
            Partition p = store.partitionsOf(topic).get(0);
            long now = System.currentTimeMillis();
            long[] at = { now - 3 * DAY, now - DAY, now - 60_000, now - 5, now + 400, now + DAY };
            List<NewJob> jobs = new ArrayList<>();
            int n = 40 + random.nextInt(80);
            for (int i = 0; i < n; i++) {
                int prio = 1 + random.nextInt(5);
                jobs.add(job(topic, "j" + i, at[random.nextInt(at.length)] + random.nextInt(1000) - 500,
                        prio == 3 && random.nextBoolean() ? null : prio));
            }
            store.enqueue(p, jobs, "");
            for (int t = 0; t < 200; t++) {
                TakeResult r = take(p, 1 + random.nextInt(12));
                assertBounds(topic, r, "round " + round + ", take " + t + " (" + r.jobs().size() + " taken)");
                if (r.jobs().isEmpty() && (r.nextDue() < 0 || r.nextDue() > r.now() + 1000)) {
                    break;
                }
            }
        }
    }

    /**
     * A take that stops in lane 1 with lane 1 jobs still due, plain jobs due and lane 4 jobs due
     * later: it keeps next and lnext, and says a take is due now.
     */
    @Test
    void aTakeThatStopsInALaneWithJobsStillDueKeepsBothBounds() {
        String topic = HandBuiltStore.fresh("pnb-stop");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(job(topic, "a1", now - 3000, 1), job(topic, "b1", now - 2000, 1), job(topic, "c1", now - 1000, 1),
                job(topic, "p", now - 5000, null), job(topic, "q", now - DAY, null), job(topic, "l4", now + 60_000, 4)), "");
        TakeResult r = take(p, 2);
        assertEquals(List.of("a1", "b1"), r.jobs().stream().map(j -> j.lease().id()).toList());
        assertTrue(r.nextDue() <= r.now(), "due now: " + r.nextDue());
        assertBounds(topic, r, "after the take that stopped in lane 1");
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertEquals(Long.toString(now - DAY), redis.str("GET", k + "next"), "the plain days untouched: next as it was");
        }
        TakeResult rest = take(p, 10);
        assertEquals(List.of("c1", "q", "p"), rest.jobs().stream().map(j -> j.lease().id()).toList());
        assertEquals(now + 60_000, rest.nextDue(), "nothing due left: the reply is the lane 4 job's runAt");
    }

    /**
     * A take that takes the last due jobs of a lane, exactly as many as it wants, stops in that lane
     * but leaves nothing due: it looks lnext up (the lane's next job is in a minute), so its taker
     * sleeps until then instead of coming back at once.
     */
    @Test
    void aTakeThatTakesALanesLastDueJobsSetsLnextToItsNextJob() {
        String topic = HandBuiltStore.fresh("pnb-last");
        Partition p = store.partitionsOf(topic).get(0);
        String k = HandBuiltStore.keysOf(topic);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(job(topic, "a", now - 3000, 2), job(topic, "b", now - 2000, 2), job(topic, "c", now - 1000, 2),
                job(topic, "later", now + 60_000, 2)), "");
        TakeResult r = take(p, 3);
        assertEquals(3, r.jobs().size());
        assertEquals(now + 60_000, r.nextDue(), "the lane's next job, not due now");
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(Long.toString(now + 60_000), redis.str("GET", k + "lnext"));
        }
    }

    /**
     * A take that takes the last due plain jobs (on an older day) looks next up: it says when the
     * next plain job is due, not that one is due now.
     */
    @Test
    void aTakeThatEmptiesThePlainDaysOfDueJobsSetsNextToTheNextJob() {
        String topic = HandBuiltStore.fresh("pnb-plain");
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(job(topic, "y", now - DAY, null), job(topic, "z", now - 1000, null), job(topic, "l1", now - 500, 1),
                job(topic, "later", now + 60_000, null)), "");
        TakeResult r = take(p, 10);
        assertEquals(List.of("l1", "y", "z"), r.jobs().stream().map(j -> j.lease().id()).toList());
        assertEquals(now + 60_000, r.nextDue());
    }

    /**
     * A take of lane jobs only (the plain days not due) that buries an expired released job of a
     * group: its slot goes to the group's next held job, a priority-3 one, into today's plain shard,
     * due now. The take looks next up after that release: its reply says a take is due now (the
     * "next" it read before had no plain job to bound).
     */
    @Test
    void aReleaseAtTheEndOfALaneTakeIsInItsReply() {
        String g = "g-" + System.nanoTime();
        Partition p = store.partitionOf(GROUPS, "x", g);
        long now = System.currentTimeMillis();
        long expires = now + 1500;
        store.enqueue(p, List.of(new NewJob(GROUPS, g + "-a", false, now - 9000, 0, "{}", IfExists.KEEP, null, g, null, null, null)), "");
        TakeResult first = take(p, 10);
        assertEquals(1, first.jobs().size(), "a in flight: the group at its limit");
        store.enqueue(p, List.of(new NewJob(GROUPS, g + "-x", false, now - 5000, 0, "{}", IfExists.KEEP, null, g, null, expires, 1),
                new NewJob(GROUPS, g + "-y", false, now - 4000, 0, "{}", IfExists.KEEP, null, g, null, null, null)), "");
        assertEquals(List.of(), take(p, 10).jobs(), "x and y held");
        store.ack(p, List.of(first.jobs().get(0).lease())); // x released into lane 1, admitted
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> System.currentTimeMillis() > expires + 20);
        TakeResult r = take(p, 10);
        assertEquals(List.of(), r.jobs(), "x expired (buried); y released at the take's end");
        assertTrue(r.nextDue() >= 0 && r.nextDue() <= r.now(), "y is due now: " + r.nextDue());
        TakeResult y = take(p, 10);
        assertEquals(List.of(g + "-y"), y.jobs().stream().map(j -> j.lease().id()).toList());
        store.ack(p, List.of(y.jobs().get(0).lease()));
    }

    /**
     * Review perf-2 S2: a "next" that went missing while plain jobs are scheduled is put back by a
     * take of the lanes alone (the safety-net poll reads nothing else), as before the take kept it.
     */
    @Test
    void aMissingNextIsPutBackByATakeOfTheLanes() {
        String topic = HandBuiltStore.fresh("pnb-lost");
        Partition p = store.partitionsOf(topic).get(0);
        String k = HandBuiltStore.keysOf(topic);
        long now = System.currentTimeMillis();
        store.enqueue(p, List.of(job(topic, "plain", now + 60_000, null), job(topic, "l1", now - 1000, 1),
                job(topic, "l1b", now - 1000, 1)), "");
        try (Resp redis = HandBuiltStore.resp()) {
            redis.num("DEL", k + "next");
        }
        TakeResult r = take(p, 1);
        assertEquals(1, r.jobs().size());
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(Long.toString(now + 60_000), redis.str("GET", k + "next"), "next looked up again");
        }
        assertBounds(topic, r, "after a lane take");
    }
}
