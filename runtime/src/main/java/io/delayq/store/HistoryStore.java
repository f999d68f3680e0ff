package io.delayq.store;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import org.jboss.logging.Logger;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * The per-minute history of the jobs in Redis: one HASH per topic and hour ({@link Keys#history}),
 * one more for the total of all topics ({@link Keys#historyTotal}), each field a minute of the
 * hour holding its counts and lateness bins (see history.lua). Written only by {@link #flush}: the
 * counts a replica gathered in memory ({@link HistoryCounts}) added with one script call per key
 * touched, so a flush costs Redis a few commands whatever the job rate, and none when nothing
 * happened. Read 24 hours at a time with at most 25 HGETALLs of one slot.
 */
@Singleton
public class HistoryStore extends StorePart {
    public static final int MAX_MINUTES = 1440;
    private static final long HOUR_MS = 3_600_000L;
    /** A key lives this long after its hour ended: 24 hours readable, plus a margin. */
    private static final long KEEP_SECONDS = 25 * 3600L;
    /** Minutes a failed flush could not write are kept this long (per key), then dropped. */
    public static final int PENDING_MINUTES = 60;
    private static final Logger LOG = Logger.getLogger(HistoryStore.class);
    private final HistoryCounts counts;
    /**
     * One call of the history script: the key it adds to, its flush id (this replica's token and
     * a sequence number) and the minutes it adds. A failed call is sent again as it was, same id:
     * history.lua applies an id once, so a call that timed out but ran in Redis is not added
     * twice by its retry.
     */
    private record Call(String key, String id, Map<Long, HistoryCounts.Minute> minutes) {
    }

    /** Per key, epoch minute → counts a call that certainly did not run carried, added to that key's next call. */
    private final Map<String, Map<Long, HistoryCounts.Minute>> pending = new HashMap<>();
    /**
     * Calls whose outcome is unknown (timed out, or their connection lost: they may have run),
     * sent again as they were, same flush id, by the next flush.
     */
    private final List<Call> unsure = new ArrayList<>();
    /** This replica's part of its flush ids: random, so that replicas (and restarts) never share one. */
    private final String flusher = Long.toString(new java.security.SecureRandom().nextLong() & Long.MAX_VALUE, 36);
    private long flushes;
    private final java.util.concurrent.atomic.AtomicLong scriptCalls = new java.util.concurrent.atomic.AtomicLong();

    @Inject
    public HistoryStore(StoreLayer layer) {
        super(layer);
        this.counts = layer.history();
    }

    /** What this replica counts (the job path adds to it; {@link #flush} empties it). */
    public HistoryCounts counts() {
        return counts;
    }

    /** Script calls the flushes of this replica made so far (the benchmark reports them). */
    public long scriptCalls() {
        return scriptCalls.get();
    }

    /** One minute of history, summed over every replica: {@code minute} epoch ms of its start. */
    public record MinuteCounts(long minute, long enqueued, long succeeded, long failed, long[] bins) {
        /** The lateness p99 in ms (upper bound of its bin), null when no attempt started in the minute. */
        public Long latenessP99Ms() {
            return HistoryCounts.p99(bins);
        }

        public long attempts() {
            long n = 0;
            for (long b : bins) {
                n += b;
            }
            return n;
        }
    }

    /**
     * Adds what was counted since the last flush to Redis: one {@code history} script call per
     * topic and hour with counts, and one per hour for the total, all sent at once. Each call
     * applies all its minutes or none; what a failed call carried is kept for that same key alone
     * and added to its next call (never counted into the total again, nor dropped from it), for at
     * most {@value #PENDING_MINUTES} minutes; a call that may have run (it timed out) is sent again
     * as it was, its flush id with it, which history.lua applies once: older ones are dropped with a WARN saying how many
     * counts were lost. Returns the number of script calls made (0 when nothing was to be written).
     */
    public synchronized int flush() {
        List<HistoryCounts.Minute> taken = counts.take();
        dropStalePending();
        if (taken.isEmpty() && pending.isEmpty()) {
            return 0;
        }
        Map<String, Map<Long, HistoryCounts.Minute>> byKey = new TreeMap<>();
        for (HistoryCounts.Minute m : taken) {
            if (m.topic() != null) { // null: a topic not this replica's, counted in the total alone
                merge(byKey, keys.history(m.topic(), hourOf(m.minute())), m);
            }
            merge(byKey, keys.historyTotal(hourOf(m.minute())), m);
        }
        pending.forEach((key, minutes) -> minutes.values().forEach(m -> merge(byKey, key, m)));
        pending.clear();
        List<Call> all = new ArrayList<>(unsure);
        unsure.clear();
        byKey.forEach((key, minutes) -> all.add(new Call(key, flusher + ":" + (++flushes), minutes)));
        List<Future<Response>> calls = new ArrayList<>(all.size());
        scriptCalls.addAndGet(all.size());
        try {
            ensureLayout();
            for (Call c : all) {
                calls.add(scripts.runAsync("history", List.of(c.key(), keys.historyFlushes(c.key())), args(c), null));
            }
            await(Future.join(calls)); // join: every call settled before the failed ones are told apart
        } catch (RuntimeException e) {
            for (int i = 0; i < all.size(); i++) {
                Future<Response> f = i < calls.size() ? calls.get(i) : null;
                if (f != null && f.succeeded()) {
                    continue;
                }
                Call c = all.get(i);
                if (f != null && f.cause() instanceof StoreUnavailableException u && !u.refused()) {
                    unsure.add(c); // may have run: again as it was, applied at most once
                } else {
                    // Certainly not run (not sent, refused, an error reply): merged into the key's next call.
                    c.minutes().values().forEach(m -> merge(pending, c.key(), m));
                }
            }
            throw e;
        }
        return calls.size();
    }

    /** Drops the kept minutes older than {@value #PENDING_MINUTES} minutes, saying how many counts were lost. */
    private void dropStalePending() {
        long oldest = counts.currentMinute() - PENDING_MINUTES;
        long lost = 0;
        int minutes = 0;
        for (var it = pending.values().iterator(); it.hasNext();) {
            Map<Long, HistoryCounts.Minute> byMinute = it.next();
            for (var m = byMinute.values().iterator(); m.hasNext();) {
                HistoryCounts.Minute c = m.next();
                if (c.minute() < oldest) {
                    lost += total(c);
                    minutes++;
                    m.remove();
                }
            }
            if (byMinute.isEmpty()) {
                it.remove();
            }
        }
        for (var it = unsure.iterator(); it.hasNext();) {
            Call c = it.next();
            if (c.minutes().keySet().stream().anyMatch(m -> m < oldest)) { // a call is sent whole or not at all
                for (HistoryCounts.Minute m : c.minutes().values()) {
                    lost += total(m);
                    minutes++;
                }
                it.remove();
            }
        }
        if (minutes > 0) {
            LOG.warnf("history: dropped %d counts of %d key-minutes that could not be written for %d minutes"
                    + " (Redis away); the charts miss them", lost, minutes, PENDING_MINUTES);
        }
    }

    private static long total(HistoryCounts.Minute c) {
        return c.enqueued() + c.succeeded() + c.failed() + Arrays.stream(c.bins()).sum();
    }

    /** Key-minutes a failed flush kept for the next one, over all keys (at most the last {@value #PENDING_MINUTES} minutes'). */
    public synchronized int pendingMinutes() {
        return pending.values().stream().mapToInt(Map::size).sum() + unsure.stream().mapToInt(c -> c.minutes().size()).sum();
    }

    private static void merge(Map<String, Map<Long, HistoryCounts.Minute>> byKey, String key, HistoryCounts.Minute m) {
        byKey.computeIfAbsent(key, k -> new TreeMap<>()).merge(m.minute(), m, HistoryStore::sum);
    }

    private static HistoryCounts.Minute sum(HistoryCounts.Minute a, HistoryCounts.Minute b) {
        long[] bins = a.bins().clone();
        for (int i = 0; i < bins.length; i++) {
            bins[i] += b.bins()[i];
        }
        return new HistoryCounts.Minute(null, a.minute(), a.enqueued() + b.enqueued(), a.succeeded() + b.succeeded(),
                a.failed() + b.failed(), bins);
    }

    /** A call's script arguments: no day shards, its key's expiry, its flush id, then minute-of-hour and counts pairs. */
    private static List<String> args(Call c) {
        Map<Long, HistoryCounts.Minute> minutes = c.minutes();
        List<String> a = new ArrayList<>();
        a.add("0"); // no day shards (see history.lua)
        a.add(Long.toString((hourOf(minutes.keySet().iterator().next()) + 1) * 3600 + KEEP_SECONDS));
        a.add(c.id());
        minutes.values().forEach(m -> {
            a.add(Long.toString(Math.floorMod(m.minute(), 60L)));
            a.add(text(m));
        });
        return a;
    }

    /** The epoch hour of an epoch minute. */
    private static long hourOf(long minute) {
        return Math.floorDiv(minute, 60L);
    }

    /** Counts as history.lua keeps them: {@code e:3,s:2,f:1,5:2,7:1} (zeros left out). */
    static String text(HistoryCounts.Minute m) {
        StringBuilder b = new StringBuilder();
        append(b, "e", m.enqueued());
        append(b, "s", m.succeeded());
        append(b, "f", m.failed());
        for (int i = 0; i < m.bins().length; i++) {
            append(b, Integer.toString(i), m.bins()[i]);
        }
        return b.toString();
    }

    private static void append(StringBuilder b, String k, long n) {
        if (n != 0) {
            if (!b.isEmpty()) {
                b.append(',');
            }
            b.append(k).append(':').append(n);
        }
    }

    /**
     * The last {@code minutes} minutes (1–{@value #MAX_MINUTES}) of a topic's history, or of all
     * topics' with {@code topic} null, oldest first, every minute present (zeros where nothing
     * happened), the last one the minute now in progress (by Redis' clock). One TIME, then one
     * HGETALL per hour spanned (at most 25), sent at once.
     */
    public List<MinuteCounts> read(String topic, int minutes) {
        if (minutes < 1 || minutes > MAX_MINUTES) {
            throw new IllegalArgumentException("minutes " + minutes);
        }
        long nowMinute = Math.floorDiv(redisTimeMs(), 60_000L);
        long first = nowMinute - minutes + 1;
        List<Long> hours = new ArrayList<>();
        List<Request> reads = new ArrayList<>();
        for (long h = hourOf(first); h <= hourOf(nowMinute); h++) {
            hours.add(h);
            reads.add(Request.cmd(Command.HGETALL).arg(topic == null ? keys.historyTotal(h) : keys.history(topic, h)));
        }
        ensureLayout();
        List<Response> replies = readAll(reads);
        Map<Long, MinuteCounts> found = new TreeMap<>();
        for (int i = 0; i < hours.size(); i++) {
            long h = hours.get(i);
            pairs(replies.get(i)).forEach((field, value) -> {
                long minute = h * 60 + Long.parseLong(field);
                found.put(minute, parse(minute, value));
            });
        }
        List<MinuteCounts> out = new ArrayList<>(minutes);
        for (long m = first; m <= nowMinute; m++) {
            MinuteCounts c = found.get(m);
            out.add(c != null ? c : new MinuteCounts(m * 60_000L, 0, 0, 0, new long[HistoryCounts.MAX_BIN + 1]));
        }
        return out;
    }

    static MinuteCounts parse(long minute, String value) {
        long e = 0, s = 0, f = 0;
        long[] bins = new long[HistoryCounts.MAX_BIN + 1];
        for (String part : value.split(",")) {
            int colon = part.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String k = part.substring(0, colon);
            long n = Long.parseLong(part.substring(colon + 1));
            switch (k) {
                case "e" -> e = n;
                case "s" -> s = n;
                case "f" -> f = n;
                default -> {
                    int bin = Integer.parseInt(k);
                    if (bin >= 0 && bin < bins.length) {
                        bins[bin] = n;
                    }
                }
            }
        }
        return new MinuteCounts(minute * 60_000L, e, s, f, bins);
    }
}
