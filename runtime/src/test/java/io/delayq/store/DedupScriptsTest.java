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

import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * The dedup window's scripts, driven directly on topics no replica serves: "dedup-store" has a
 * 1 s window, "dedup-mem" an hour (see {@code STORE}).
 */
class DedupScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics.dedup-store.dedup-window", "1s",
            "delayq.topics.dedup-mem.dedup-window", "1h");
    JobQueue store = STORE.queue;
    Inspection inspection = STORE.inspection;

    private static NewJob due(String topic, String id) {
        return new NewJob(topic, id, true, 0, 0, "{\"n\":1}");
    }

    /** Enqueues the ids due now and takes them: their leases, in order. */
    private List<Lease> runningJobs(String topic, List<String> ids, String tokenPrefix) {
        Partition p = store.partitionsOf(topic).get(0);
        store.enqueue(p, ids.stream().map(id -> due(topic, id)).toList(), "");
        List<Lease> leases = new ArrayList<>();
        Set<Integer> older = new HashSet<>();
        // A take leases what is due by Redis time; the jobs are due at once.
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
            store.take(p, ids.size(), 30_000, tokenPrefix + leases.size() + ":", older, List.of(), 0).jobs()
                    .forEach(j -> leases.add(j.lease()));
            return leases.size() == ids.size();
        });
        return leases;
    }

    @Test
    void bothAckPathsRememberTheIdsAndExpiredOnesAreDroppedByTheNextAck() {
        String topic = "dedup-store";
        String run = HandBuiltStore.fresh("r");
        String a = run + "a", b = run + "b", c = run + "c", d = run + "d", e = run + "e";
        Partition p = store.partitionsOf(topic).get(0);
        List<Lease> leases = runningJobs(topic, List.of(a, b, c), run);
        assertEquals(List.of(), store.ack(p, leases.subList(0, 2)), "ack.lua");
        TakeResult t = store.take(p, 0, 30_000, run + "t:", new HashSet<>(), leases.subList(2, 3), 0);
        assertEquals(List.of(), t.staleAcks(), "an ack carried by take.lua");
        try (Resp redis = HandBuiltStore.resp()) {
            String done = HandBuiltStore.keysOf(topic) + "done";
            for (String id : List.of(a, b, c)) {
                assertEquals(JobState.SUCCEEDED, inspection.get(topic, id).orElseThrow().state(), id);
                assertTrue(redis.str("ZSCORE", done, id) != null, id + " in " + done);
            }
            long ttl = redis.num("PTTL", done);
            assertTrue(ttl > 0 && ttl <= 1000, "the key expires a window after its last write: " + ttl);
            assertEquals(0, redis.num("HEXISTS", HandBuiltStore.keysOf(topic) + "jobs", a), "not kept in the jobs hash");
            assertEquals(0, inspection.gauges(topic)[0], "nothing scheduled");

            // Half a window later another success keeps the key alive past a, b and c's window;
            // once that passed (Redis time) they are unknown, and the next ack drops them.
            long lastAck = inspection.get(topic, c).orElseThrow().finishedAt().toEpochMilli();
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> redisTime(redis) >= lastAck + 500);
            store.ack(p, runningJobs(topic, List.of(e), run + "e"));
            Awaitility.await().atMost(Duration.ofSeconds(5))
                    .until(() -> inspection.get(topic, a).isEmpty() && inspection.get(topic, c).isEmpty());
            assertEquals(4, redis.num("ZCARD", done), "expired entries wait for the next ack");
            store.ack(p, runningJobs(topic, List.of(d), run + "d"));
            assertEquals(List.of(e, d), redis.list("ZRANGE", done, 0, -1).stream().map(Object::toString).toList());
            assertEquals(JobState.SUCCEEDED, inspection.get(topic, d).orElseThrow().state());
        }
    }

    @Test
    void anEnqueuePastTheWindowSchedulesTheIdAndForgetsItsOldSuccess() {
        String topic = "dedup-store";
        String id = HandBuiltStore.fresh("again");
        Partition p = store.partitionsOf(topic).get(0);
        store.ack(p, runningJobs(topic, List.of(id), id));
        assertEquals(JobState.SUCCEEDED, store.enqueue(p, List.of(due(topic, id)), "").get(0).state());
        try (Resp redis = HandBuiltStore.resp()) {
            String done = HandBuiltStore.keysOf(topic) + "done";
            // Another success half a window later keeps the key, and the old entry, past the window.
            long acked = inspection.get(topic, id).orElseThrow().finishedAt().toEpochMilli();
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> redisTime(redis) >= acked + 500);
            store.ack(p, runningJobs(topic, List.of(id + "x"), id + "x"));
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> inspection.get(topic, id).isEmpty());
            assertTrue(redis.str("ZSCORE", done, id) != null, "the expired entry is still there");
            var again = store.enqueue(p, List.of(due(topic, id), due(topic, id)), "");
            assertTrue(again.get(0).created(), "free again");
            assertEquals(JobState.SCHEDULED, again.get(1).state(), "the batch's second copy sees the first");
            assertEquals(null, redis.str("ZSCORE", done, id), "a scheduled id is not in done");
            assertEquals(JobState.SCHEDULED, inspection.get(topic, id).orElseThrow().state());
        }
    }

    private static long redisTime(Resp redis) {
        List<Object> t = redis.list("TIME");
        return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000;
    }

    @Test
    void onlyATopicWithAWindowKeepsADoneSet() {
        String topic = HandBuiltStore.fresh("nowindow");
        Partition p = store.partitionsOf(topic).get(0);
        List<Lease> leases = runningJobs(topic, List.of("x", "y"), "nw");
        store.ack(p, leases.subList(0, 1));
        store.take(p, 0, 30_000, "nw-t:", new HashSet<>(), leases.subList(1, 2), 0);
        String id = HandBuiltStore.fresh("with");
        Partition withWindow = store.partitionsOf("dedup-store").get(0);
        store.ack(withWindow, runningJobs("dedup-store", List.of(id), id));
        assertTrue(inspection.get(topic, "x").isEmpty());
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0, redis.num("EXISTS", HandBuiltStore.keysOf(topic) + "done"), "no window: nothing remembered");
            assertEquals(0, redis.num("HLEN", HandBuiltStore.keysOf(topic) + "jobs"));
            assertTrue(redis.str("ZSCORE", HandBuiltStore.keysOf("dedup-store") + "done", id) != null, "a window: remembered");
        }
        assertTrue(store.enqueue(p, List.of(due(topic, "x")), "").get(0).created());
        assertEquals(JobState.SUCCEEDED, store.enqueue(withWindow, List.of(due("dedup-store", id)), "").get(0).state());
    }

    /**
     * Memory per remembered id: Redis' used_memory before and after 10,000 jobs were enqueued,
     * taken and acked on an hour-window topic (what remains is the done set), against the same
     * on a topic without a window. Printed for docs/concepts.md ("Dedup window"); bounded loosely so that a change to
     * the layout that doubles it is noticed.
     */
    @Test
    void tenThousandRememberedIdsCostAboutAHundredBytesEach() {
        int n = 10_000;
        long without = residue(HandBuiltStore.fresh("nowindow-mem"), n);
        long with = residue("dedup-mem", n);
        long perId = (with - without) / n;
        try (Resp redis = HandBuiltStore.resp()) {
            long keyBytes = redis.num("MEMORY", "USAGE", HandBuiltStore.keysOf("dedup-mem") + "done", "SAMPLES", 0);
            System.out.printf("dedup window: used_memory after %d acked jobs: %+d bytes without a window, %+d with one:"
                    + " %d bytes per remembered id (MEMORY USAGE of the done key: %d bytes, %d per id)%n",
                    n, without, with, perId, keyBytes, keyBytes / n);
        }
        assertTrue(perId > 20 && perId < 200, perId + " bytes per remembered id");
    }

    /** used_memory after minus before n jobs (13-character ids) were enqueued, taken and acked. */
    private long residue(String topic, int n) {
        Partition p = store.partitionsOf(topic).get(0);
        String run = HandBuiltStore.fresh("m").replace("-", "");
        runningJobs(topic, List.of(run + "warm"), run + "w").forEach(l -> store.ack(p, List.of(l)));
        List<String> ids = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            ids.add(String.format("%s%07d", run.length() > 6 ? run.substring(0, 6) : run, i));
        }
        long before = usedMemory();
        List<Lease> leases = runningJobs(topic, ids, run);
        for (int i = 0; i < n; i += 500) {
            store.ack(p, leases.subList(i, Math.min(n, i + 500)));
        }
        return usedMemory() - before;
    }

    private static long usedMemory() {
        try (Resp redis = HandBuiltStore.resp()) {
            for (String line : redis.str("INFO", "memory").split("\r?\n")) {
                if (line.startsWith("used_memory:")) {
                    return Long.parseLong(line.substring("used_memory:".length()).trim());
                }
            }
        }
        throw new IllegalStateException("no used_memory in INFO memory");
    }

    @Test
    void cancelAndPurgeForgetASuccessRememberedFromBeforeTheJob() {
        // A job enqueued by a process without the window while its id is still remembered: once
        // it is cancelled (or dies and is purged), the old success must not answer for its id.
        String topic = "dedup-store";
        String id = HandBuiltStore.fresh("again");
        Partition p = store.partitionsOf(topic).get(0);
        try (Resp redis = HandBuiltStore.resp()) {
            String done = HandBuiltStore.keysOf(topic) + "done";
            store.enqueue(p, List.of(new NewJob(topic, id, true, 3_600_000, 0, "{}")), "");
            redis.call("ZADD", done, Long.toString(redisTime(redis)), id);
            assertEquals(io.delayq.core.CancelOutcome.CANCELLED, inspection.cancel(topic, id));
            assertEquals(null, redis.str("ZSCORE", done, id), "forgotten with the cancel");
            assertTrue(inspection.get(topic, id).isEmpty(), "unknown, not succeeded: " + inspection.get(topic, id));
        }
    }
}
