package io.delayq.store;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;

/**
 * What this replica counted for the history since its last flush, per topic and minute, in
 * memory: the job path only adds to counters here (no Redis call); {@link HistoryStore#flush}
 * takes them and adds them to Redis. Off (the default, until the recorder turns it on with
 * {@code delayq.history.enabled}) every call returns at once.
 *
 * <p>Lateness is kept as counts in fixed bins of a factor √2 ({@link #bin}), not as a p99:
 * percentiles of several replicas cannot be combined, bin counts can (summed in Redis), and the
 * p99 is read from the summed bins.
 *
 * <p>Per-topic cells are kept only for the topics this replica serves or configures
 * ({@link OwnTopics}): the counts of any other topic (an enqueue for a topic served elsewhere) go
 * into the total of all topics alone (a cell of topic {@code null}), so that a stream of new topic
 * names does not grow this map.
 */
public final class HistoryCounts {
    /** Bins 0..MAX_BIN: 0 is on time (lateness ≤ 0), the last also holds everything later. */
    public static final int MAX_BIN = 49;
    private static final long MAX_MS = 1L << 24; // 4.7 hours
    private volatile boolean enabled;
    private volatile LongSupplier clock = System::currentTimeMillis;
    private final Map<Key, Cell> cells = new ConcurrentHashMap<>();
    private final OwnTopics own;

    HistoryCounts(OwnTopics own) {
        this.own = own;
    }

    /** {@code topic} null: counts of topics not this replica's, for the total only. */
    record Key(String topic, long minute) {
    }

    /** One topic's counts in one minute. */
    static final class Cell {
        final AtomicLong enqueued = new AtomicLong(), succeeded = new AtomicLong(), failed = new AtomicLong();
        final AtomicLongArray bins = new AtomicLongArray(MAX_BIN + 1);
    }

    /** Counts of one topic (or, topic null, of the total alone) in one minute, taken for a flush. */
    public record Minute(String topic, long minute, long enqueued, long succeeded, long failed, long[] bins) {
        boolean empty() {
            if (enqueued != 0 || succeeded != 0 || failed != 0) {
                return false;
            }
            for (long b : bins) {
                if (b != 0) {
                    return false;
                }
            }
            return true;
        }
    }

    /** Turns counting on, minutes read from {@code clock} (epoch ms; the replica's estimate of Redis time). */
    public void enable(LongSupplier clock) {
        this.clock = clock;
        this.enabled = true;
    }

    public void disable() {
        this.enabled = false;
    }

    public boolean enabled() {
        return enabled;
    }

    private Cell cell(String topic) {
        Key k = new Key(own.contains(topic) ? topic : null, Math.floorDiv(clock.getAsLong(), 60_000L));
        Cell c = cells.get(k);
        return c != null ? c : cells.computeIfAbsent(k, x -> new Cell());
    }

    /** {@code n} new jobs of the topic (created, not an id kept or replaced). */
    public void enqueued(String topic, int n) {
        if (enabled && n > 0) {
            cell(topic).enqueued.addAndGet(n);
        }
    }

    /** An attempt that succeeded (its ack queued). */
    public void succeeded(String topic) {
        if (enabled) {
            cell(topic).succeeded.incrementAndGet();
        }
    }

    /** A failed attempt (retried or dead). */
    public void failed(String topic) {
        if (enabled) {
            cell(topic).failed.incrementAndGet();
        }
    }

    /** An attempt started {@code latenessMs} after its runAt. */
    public void started(String topic, long latenessMs) {
        if (enabled) {
            cell(topic).bins.incrementAndGet(bin(latenessMs));
        }
    }

    /**
     * The bin of a lateness: 0 for ≤ 0 ms, else 1 + 2·⌊log2 ms⌋, plus 1 in the upper half (from
     * √2·2^k): bins of a factor √2, exact in integers. Everything from 2^24 ms on is the last bin.
     */
    public static int bin(long ms) {
        if (ms <= 0) {
            return 0;
        }
        long l = Math.min(ms, MAX_MS);
        int k = 63 - Long.numberOfLeadingZeros(l);
        int upper = l * l >= 1L << (2 * k + 1) ? 1 : 0;
        return Math.min(MAX_BIN, 1 + 2 * k + upper);
    }

    /** The largest lateness (ms) in a bin: what a p99 in that bin is reported as ("≤"). */
    public static long upperMs(int bin) {
        if (bin <= 0) {
            return 0;
        }
        int k = (bin - 1) / 2;
        return (bin - 1) % 2 == 0 ? (long) Math.ceil(Math.sqrt(2) * (1L << k)) - 1 : (1L << (k + 1)) - 1;
    }

    /** The p99 of summed bin counts (ms, as {@link #upperMs}); null with no attempt. */
    public static Long p99(long[] bins) {
        long total = 0;
        for (long b : bins) {
            total += b;
        }
        if (total == 0) {
            return null;
        }
        long rank = (long) Math.ceil(total * 0.99);
        long seen = 0;
        for (int i = 0; i < bins.length; i++) {
            seen += bins[i];
            if (seen >= rank) {
                return upperMs(i);
            }
        }
        return upperMs(bins.length - 1);
    }

    /**
     * Takes every count made so far (each counter read and zeroed atomically: an increment racing
     * with this lands in this flush or the next, never nowhere), and forgets the cells of minutes
     * that ended (no counter writes to them any more).
     */
    List<Minute> take() {
        long current = Math.floorDiv(clock.getAsLong(), 60_000L);
        List<Minute> out = new ArrayList<>();
        cells.forEach((k, c) -> {
            long[] bins = new long[MAX_BIN + 1];
            for (int i = 0; i <= MAX_BIN; i++) {
                bins[i] = c.bins.get(i) == 0 ? 0 : c.bins.getAndSet(i, 0);
            }
            Minute m = new Minute(k.topic(), k.minute(), c.enqueued.getAndSet(0), c.succeeded.getAndSet(0),
                    c.failed.getAndSet(0), bins);
            if (!m.empty()) {
                out.add(m);
            }
            if (k.minute() < current - 1) {
                cells.remove(k);
                // a count that came after the read above (a writer whose minute just ended) is kept
                Minute late = new Minute(k.topic(), k.minute(), c.enqueued.getAndSet(0), c.succeeded.getAndSet(0),
                        c.failed.getAndSet(0), drain(c.bins));
                if (!late.empty()) {
                    out.add(late);
                }
            }
        });
        return out;
    }

    private static long[] drain(AtomicLongArray a) {
        long[] out = new long[a.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.getAndSet(i, 0);
        }
        return out;
    }

    /** The epoch minute now, by the counting clock. */
    long currentMinute() {
        return Math.floorDiv(clock.getAsLong(), 60_000L);
    }
}
