package io.delayq.store;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import io.delayq.core.DelayqConfig;
import io.delayq.dev.Resp;

/**
 * The history's buckets in a real Redis, written by stores built by hand on a prefix of their
 * own (so the total is theirs alone) with clocks the test sets: two writers' counts sum, the p99
 * comes from the merged bins, every key expires by itself, every minute is answered, and the
 * size of a full day of one topic.
 */
class HistoryStoreTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured();
    DelayqConfig config = STORE.config;
    io.vertx.redis.client.Redis redisClient = STORE.client;

    /** A writer (or reader) of the history under {@code prefix}, its minutes read from {@code clock}. */
    private HistoryStore writer(String prefix, AtomicLong clock) {
        return writer(prefix, clock, topic -> true);
    }

    /** As above, keeping per-topic history only for the topics {@code own} says are this replica's. */
    private HistoryStore writer(String prefix, AtomicLong clock, OwnTopics own) {
        return writer(prefix, clock, own, null);
    }

    /** As above, with its Redis calls timing out after {@code timeout} (null: the default). */
    private HistoryStore writer(String prefix, AtomicLong clock, OwnTopics own, Duration timeout) {
        DelayqConfig mine = (DelayqConfig) java.lang.reflect.Proxy.newProxyInstance(DelayqConfig.class.getClassLoader(),
                new Class<?>[] { DelayqConfig.class }, (proxy, method, args) -> method.getName().equals("prefix")
                        ? prefix
                        : timeout != null && method.getName().equals("redisTimeout") ? timeout
                        : method.invoke(config, args));
        RedisGateway gateway = new RedisGateway(redisClient, mine, new SimpleMeterRegistry());
        HistoryStore store = new HistoryStore(new StoreLayer(gateway, new Scripts(gateway, new SimpleMeterRegistry()),
                new Keys(mine), mine, own));
        store.counts().enable(clock::get);
        return store;
    }

    @Test
    void binsCoverEveryLatenessWithinAFactorOfRootTwo() {
        int last = -1;
        for (long ms = 0; ms < 200_000; ms++) {
            int bin = HistoryCounts.bin(ms);
            assertTrue(bin >= last, "bins grow with lateness");
            last = bin;
            long upper = HistoryCounts.upperMs(bin);
            assertTrue(ms <= upper && upper <= Math.max(ms, 1) * 1.42, ms + " ms is in bin " + bin + " up to " + upper);
        }
        assertEquals(HistoryCounts.MAX_BIN, HistoryCounts.bin(Long.MAX_VALUE));
    }

    /**
     * Issue 32's cold review: a flush whose call timed out but ran in Redis was added again by the
     * next flush (its minutes kept and merged into the next call): a double count. Each call now
     * carries a flush id that history.lua applies once, and a failed call is sent again as it was.
     */
    @Test
    void aFlushWhoseCallTimedOutButRanIsNotAddedAgainByTheNext() throws Exception {
        String prefix = "hist-" + HandBuiltStore.fresh("late");
        String topic = HandBuiltStore.fresh("late");
        AtomicLong clock = new AtomicLong();
        HistoryStore a = writer(prefix, clock, t -> true, Duration.ofMillis(300));
        long now = a.redisTimeMs();
        clock.set(now - 60_000L);
        a.counts().enqueued(topic, 1); // the first flush learns the layout: not under the pause
        a.flush();
        a.counts().enqueued(topic, 10);
        try (Resp redis = HandBuiltStore.resp()) {
            // Writes wait 1.5 s: the flush's calls time out (300 ms), and run once the pause ends.
            redis.call("CLIENT", "PAUSE", "1500", "WRITE");
            assertThrows(RuntimeException.class, a::flush);
            String key = prefix + ":hist:{" + topic + "}:" + Math.floorDiv(now - 60_000L, 3_600_000L);
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> redis.str("HGET", key,
                    Long.toString(Math.floorMod(Math.floorDiv(now - 60_000L, 60_000L), 60L))).contains("e:11"));
        }
        a.counts().enqueued(topic, 100);
        assertEquals(4, a.flush(), "the two calls that timed out again, as they were (topic, total), and the new two");
        long enqueued = a.read(topic, 5).stream().mapToLong(HistoryStore.MinuteCounts::enqueued).sum();
        assertEquals(111, enqueued, "1 + 10 (the call that timed out, applied once) + 100");
    }

    @Test
    void twoWritersSumAndTheP99ComesFromTheMergedBins() {
        String prefix = "hist-" + HandBuiltStore.fresh("sum");
        String topic = HandBuiltStore.fresh("sum");
        AtomicLong clockA = new AtomicLong(), clockB = new AtomicLong();
        HistoryStore a = writer(prefix, clockA), b = writer(prefix, clockB);
        long now = a.redisTimeMs();
        long m3 = now - 3 * 60_000L, m1 = now - 60_000L;

        clockA.set(m3);
        a.counts().enqueued(topic, 10);
        for (int i = 0; i < 90; i++) {
            a.counts().started(topic, 3);
        }
        for (int i = 0; i < 7; i++) {
            a.counts().succeeded(topic);
        }
        a.counts().failed(topic);
        clockB.set(m3);
        b.counts().enqueued(topic, 5);
        for (int i = 0; i < 10; i++) {
            b.counts().started(topic, 800);
        }
        b.counts().failed(topic);
        b.counts().failed("other-" + topic);
        clockA.set(m1);
        a.counts().enqueued(topic, 4);
        a.counts().succeeded(topic);
        a.counts().started(topic, 0);

        boolean oneHour = Math.floorDiv(m3, 3_600_000L) == Math.floorDiv(m1, 3_600_000L);
        assertEquals(oneHour ? 2 : 4, a.flush(), "one call per topic and hour, and per hour for the total");
        assertEquals(3, b.flush(), "its topic, the other topic, the total");
        assertEquals(0, a.flush(), "nothing counted since: nothing written");
        // a restart: a new writer adds to what is there
        HistoryStore restarted = writer(prefix, clockA);
        clockA.set(m1);
        restarted.counts().enqueued(topic, 1);
        restarted.flush();

        List<HistoryStore.MinuteCounts> minutes = a.read(topic, 5);
        assertEquals(5, minutes.size(), "every minute, with nothing in some");
        for (int i = 1; i < minutes.size(); i++) {
            assertEquals(minutes.get(i - 1).minute() + 60_000L, minutes.get(i).minute(), "oldest first, one a minute");
        }
        assertEquals(Math.floorDiv(now, 60_000L) * 60_000L, minutes.get(4).minute(), "the last is the minute now");
        HistoryStore.MinuteCounts at3 = minutes.get(1), at2 = minutes.get(2), at1 = minutes.get(3);
        assertEquals(Math.floorDiv(m3, 60_000L) * 60_000L, at3.minute());
        assertEquals(15, at3.enqueued(), "10 + 5");
        assertEquals(7, at3.succeeded());
        assertEquals(2, at3.failed(), "one of each writer; the other topic's is its own");
        assertEquals(100, at3.attempts());
        // A alone: p99 3 ms; B alone: 800 ms's bin; merged, the 99th of 100 is one of B's.
        assertEquals(HistoryCounts.upperMs(HistoryCounts.bin(800)), at3.latenessP99Ms());
        assertEquals(0, at2.enqueued() + at2.succeeded() + at2.failed() + at2.attempts());
        assertNull(at2.latenessP99Ms(), "no attempt: no p99");
        assertEquals(5, at1.enqueued(), "4, and 1 after the restart");
        assertEquals(0L, at1.latenessP99Ms(), "started on time");

        List<HistoryStore.MinuteCounts> total = a.read(null, 5);
        assertEquals(15, total.get(1).enqueued());
        assertEquals(3, total.get(1).failed(), "both topics");
        assertEquals(HistoryCounts.upperMs(HistoryCounts.bin(800)), total.get(1).latenessP99Ms());
        assertEquals(5, total.get(3).enqueued());

        try (Resp redis = HandBuiltStore.resp()) {
            long hour = Math.floorDiv(m3, 3_600_000L);
            for (String key : List.of(prefix + ":hist:{" + topic + "}:" + hour, prefix + ":hist:{~all}:" + hour)) {
                long ttl = redis.num("TTL", key);
                long expected = (hour + 1) * 3600 + 25 * 3600 - now / 1000;
                assertTrue(Math.abs(ttl - expected) <= 5 && ttl > 24 * 3600, key + " expires 25 h after its hour ended: "
                        + ttl + " s left, " + expected + " expected");
            }
        }
    }

    @Test
    void aFullDayOfOneTopicIsReadWithAtMost25CallsAndItsSizeIsMeasured() {
        String prefix = "hist-" + HandBuiltStore.fresh("day");
        String topic = HandBuiltStore.fresh("day");
        AtomicLong clock = new AtomicLong();
        HistoryStore w = writer(prefix, clock);
        long now = w.redisTimeMs();
        // Every minute of a day busy: thousands of jobs, failures, lateness over 6 bins.
        for (int m = 0; m < 1440; m++) {
            clock.set(now - m * 60_000L);
            w.counts().enqueued(topic, 3000 + m);
            for (int i = 0; i < 6; i++) {
                w.counts().started(topic, 2L << (2 * i));
            }
            for (int i = 0; i < 12; i++) {
                w.counts().succeeded(topic);
            }
            w.counts().failed(topic);
        }
        int calls = w.flush();
        assertTrue(calls <= 50, "25 hours of the topic and of the total at most: " + calls);
        List<HistoryStore.MinuteCounts> day = w.read(topic, 1440);
        assertEquals(1440, day.size());
        assertTrue(day.stream().allMatch(m -> m.enqueued() >= 3000 && m.failed() == 1 && m.attempts() == 6),
                "every minute read back");
        long bytes = 0;
        long hours = 0;
        try (Resp redis = HandBuiltStore.resp()) {
            for (Object key : redis.list("KEYS", prefix + ":hist:{" + topic + "}:*")) {
                bytes += redis.num("MEMORY", "USAGE", key.toString(), "SAMPLES", "0");
                hours++;
                assertEquals("listpack", redis.str("OBJECT", "ENCODING", key.toString()), "a compact hash");
            }
        }
        System.out.printf("history of one busy topic, 24 h: %d keys, %d bytes (MEMORY USAGE)%n", hours, bytes);
        assertTrue(bytes < 100_000, "a day of one topic stays small: " + bytes + " bytes");
    }

    private static String topicKey(String prefix, String topic, long minute) {
        return prefix + ":hist:{" + topic + "}:" + Math.floorDiv(minute, 60L);
    }

    private static String totalKey(String prefix, long minute) {
        return prefix + ":hist:{~all}:" + Math.floorDiv(minute, 60L);
    }

    /** The counts of the epoch minute {@code minute} in the last {@code span} minutes of a topic (null: the total). */
    private static HistoryStore.MinuteCounts at(HistoryStore s, String topic, long minute, int span) {
        return s.read(topic, span).stream().filter(c -> c.minute() == minute * 60_000L).findFirst().orElseThrow();
    }

    /**
     * A topic's key failing while the total's call goes through (on a cluster: two slots, one master
     * away), for several flushes: once it is back, the topic and the total each hold every count
     * exactly once. And the other way round: a failed total is written later, the topic not twice.
     * A key of the wrong type makes exactly that one key's script call fail.
     */
    @Test
    void aFailedKeyIsRetriedAloneAndNeitherItNorTheTotalCountsTwice() {
        String topic = HandBuiltStore.fresh("part");
        AtomicLong clock = new AtomicLong();
        String prefix = "hist-" + HandBuiltStore.fresh("part");
        HistoryStore w = writer(prefix, clock);
        long now = w.redisTimeMs();
        clock.set(now - 2 * 60_000L);
        long minute = Math.floorDiv(clock.get(), 60_000L);
        try (Resp redis = HandBuiltStore.resp()) {
            redis.call("SET", topicKey(prefix, topic, minute), "not a hash");
            w.counts().enqueued(topic, 7);
            w.counts().succeeded(topic);
            assertThrows(RuntimeException.class, w::flush, "the topic's call failed");
            for (int i = 0; i < 5; i++) { // the topic's master away for several flushes
                w.counts().enqueued(topic, 1);
                assertThrows(RuntimeException.class, w::flush);
                assertEquals(1, w.pendingMinutes(), "the topic's minute kept for its key alone");
            }
            assertEquals(12, at(w, null, minute, 5).enqueued(), "the total written as counted, each count once");
            redis.call("DEL", topicKey(prefix, topic, minute));
            assertEquals(1, w.flush(), "the topic's key alone: the total has it already");
            assertEquals(0, w.pendingMinutes());
            assertEquals(12, at(w, topic, minute, 5).enqueued(), "7 and 5 more, once");
            assertEquals(1, at(w, topic, minute, 5).succeeded());
            assertEquals(12, at(w, null, minute, 5).enqueued(), "the total not counted again");
            assertEquals(1, at(w, null, minute, 5).succeeded());

            // The total failing while the topic's call goes through.
            String prefix2 = "hist-" + HandBuiltStore.fresh("part");
            HistoryStore v = writer(prefix2, clock);
            redis.call("SET", totalKey(prefix2, minute), "not a hash");
            v.counts().enqueued(topic, 4);
            v.counts().failed(topic);
            assertThrows(RuntimeException.class, v::flush);
            v.counts().enqueued(topic, 2);
            assertThrows(RuntimeException.class, v::flush);
            assertEquals(6, at(v, topic, minute, 5).enqueued(), "the topic written as counted");
            redis.call("DEL", totalKey(prefix2, minute));
            assertEquals(1, v.flush(), "the total's key alone");
            assertEquals(6, at(v, null, minute, 5).enqueued(), "the total has every count, none dropped");
            assertEquals(1, at(v, null, minute, 5).failed());
            assertEquals(6, at(v, topic, minute, 5).enqueued(), "the topic not counted twice");
            assertEquals(1, at(v, topic, minute, 5).failed());
        }
    }

    /** What a key could not take is kept 60 minutes, then dropped (with a WARN): memory stays bounded. */
    @Test
    void keptMinutesAreDroppedAfterAnHour() {
        String topic = HandBuiltStore.fresh("stale");
        String prefix = "hist-" + HandBuiltStore.fresh("stale");
        AtomicLong clock = new AtomicLong();
        HistoryStore w = writer(prefix, clock);
        long now = w.redisTimeMs();
        clock.set(now - 70 * 60_000L);
        long minute = Math.floorDiv(clock.get(), 60_000L);
        try (Resp redis = HandBuiltStore.resp()) {
            redis.call("SET", topicKey(prefix, topic, minute), "not a hash");
            w.counts().enqueued(topic, 4);
            assertThrows(RuntimeException.class, w::flush);
            clock.set((minute + HistoryStore.PENDING_MINUTES) * 60_000L);
            assertThrows(RuntimeException.class, w::flush, "60 minutes on: still tried");
            assertEquals(1, w.pendingMinutes());
            clock.set((minute + HistoryStore.PENDING_MINUTES + 1) * 60_000L);
            assertEquals(0, w.flush(), "61 minutes on: dropped, nothing left to write");
            assertEquals(0, w.pendingMinutes(), "nothing kept");
            redis.call("DEL", topicKey(prefix, topic, minute));
            assertEquals(0, w.flush());
            assertEquals(0, at(w, topic, minute, 80).enqueued(), "the dropped counts are not written later");
            assertEquals(4, at(w, null, minute, 80).enqueued(), "the total's call had gone through");
        }
    }

    /**
     * Per-topic history only for the topics this replica serves or configures: enqueues for any
     * other name (a thousand of them) count in the total alone, no key and no cell of their own.
     */
    @Test
    void topicsNotThisReplicasCountInTheTotalAlone() {
        String mine = HandBuiltStore.fresh("mine");
        String stranger = HandBuiltStore.fresh("stranger");
        String prefix = "hist-" + HandBuiltStore.fresh("own");
        AtomicLong clock = new AtomicLong();
        HistoryStore w = writer(prefix, clock, mine::equals);
        long now = w.redisTimeMs();
        clock.set(now - 60_000L);
        long minute = Math.floorDiv(clock.get(), 60_000L);
        w.counts().enqueued(mine, 3);
        w.counts().succeeded(mine);
        for (int i = 0; i < 1000; i++) {
            w.counts().enqueued(stranger + i, 1);
        }
        w.counts().failed(stranger);
        assertEquals(2, w.flush(), "the own topic's key and the total's, none for the others");
        assertEquals(3, at(w, mine, minute, 5).enqueued());
        assertEquals(0, at(w, stranger + "0", minute, 5).enqueued());
        assertEquals(1003, at(w, null, minute, 5).enqueued(), "everyone's enqueues in the total");
        assertEquals(1, at(w, null, minute, 5).failed());
        assertEquals(1, at(w, null, minute, 5).succeeded());
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0, redis.countKeys(prefix + ":hist:{" + stranger + "*"), "no key of a topic not this replica's");
        }
    }
}
