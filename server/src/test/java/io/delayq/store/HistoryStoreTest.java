package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import io.delayq.core.DelayqConfig;
import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

/**
 * The history's buckets in a real Redis, written by stores built by hand on a prefix of their
 * own (so the total is theirs alone) with clocks the test sets: two writers' counts sum, the p99
 * comes from the merged bins, every key expires by itself, every minute is answered, and the
 * size of a full day of one topic.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class HistoryStoreTest {
    @Inject
    DelayqConfig config;
    @Inject
    io.vertx.redis.client.Redis redisClient;

    /** A writer (or reader) of the history under {@code prefix}, its minutes read from {@code clock}. */
    private HistoryStore writer(String prefix, AtomicLong clock) {
        DelayqConfig own = (DelayqConfig) java.lang.reflect.Proxy.newProxyInstance(DelayqConfig.class.getClassLoader(),
                new Class<?>[] { DelayqConfig.class }, (proxy, method, args) -> method.getName().equals("prefix")
                        ? prefix
                        : method.invoke(config, args));
        RedisGateway gateway = new RedisGateway(redisClient, own, new SimpleMeterRegistry());
        HistoryStore store = new HistoryStore(new StoreLayer(gateway, new Scripts(gateway, new SimpleMeterRegistry()),
                new Keys(own), own));
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

    @Test
    void twoWritersSumAndTheP99ComesFromTheMergedBins() {
        String prefix = "hist-" + Topics.fresh("sum");
        String topic = Topics.fresh("sum");
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

        try (Resp redis = RedisTestResource.resp()) {
            long hour = Math.floorDiv(m3, 3_600_000L);
            for (String key : List.of(prefix + ":hist:{" + topic + "}:" + hour, prefix + ":hist:{~all}:" + hour)) {
                long ttl = redis.num("TTL", key);
                assertTrue(ttl > 25 * 3600 - 60 && ttl <= 26 * 3600, key + " expires 25 h after its hour: " + ttl);
            }
        }
    }

    @Test
    void aFullDayOfOneTopicIsReadWithAtMost25CallsAndItsSizeIsMeasured() {
        String prefix = "hist-" + Topics.fresh("day");
        String topic = Topics.fresh("day");
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
        try (Resp redis = RedisTestResource.resp()) {
            for (Object key : redis.list("KEYS", prefix + ":hist:{" + topic + "}:*")) {
                bytes += redis.num("MEMORY", "USAGE", key.toString(), "SAMPLES", "0");
                hours++;
                assertEquals("listpack", redis.str("OBJECT", "ENCODING", key.toString()), "a compact hash");
            }
        }
        System.out.printf("history of one busy topic, 24 h: %d keys, %d bytes (MEMORY USAGE)%n", hours, bytes);
        assertTrue(bytes < 100_000, "a day of one topic stays small: " + bytes + " bytes");
    }
}
