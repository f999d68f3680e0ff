package io.delayq.store;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

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
    private final HistoryCounts counts;

    @Inject
    public HistoryStore(StoreLayer layer) {
        super(layer);
        this.counts = layer.history();
    }

    /** What this replica counts (the job path adds to it; {@link #flush} empties it). */
    public HistoryCounts counts() {
        return counts;
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
     * topic and hour with counts, and one per hour for the total, all sent at once. Counts that
     * could not be written are kept for the next flush (those of minutes past the history's 24
     * hours are dropped). Returns the number of script calls made (0 when nothing was counted).
     */
    public int flush() {
        List<HistoryCounts.Minute> taken = counts.take();
        if (taken.isEmpty()) {
            return 0;
        }
        Map<String, List<String>> byKey = new TreeMap<>();
        Map<Long, HistoryCounts.Minute> totals = new TreeMap<>();
        for (HistoryCounts.Minute m : taken) {
            add(byKey, keys.history(m.topic(), hourOf(m.minute())), m);
            totals.merge(m.minute(), m, HistoryStore::sum);
        }
        totals.values().forEach(m -> add(byKey, keys.historyTotal(hourOf(m.minute())), m));
        List<Future<Response>> calls = new ArrayList<>(byKey.size());
        try {
            ensureLayout();
            byKey.forEach((key, args) -> calls.add(scripts.runAsync("history", List.of(key), args, null)));
            await(Future.all(calls));
        } catch (RuntimeException e) {
            // Per key, each script call applied all its minutes or none: put back those whose call failed.
            List<HistoryCounts.Minute> back = new ArrayList<>();
            long oldest = Math.floorDiv(System.currentTimeMillis(), 60_000L) - MAX_MINUTES - 60;
            int i = 0;
            List<String> failed = new ArrayList<>();
            for (String key : byKey.keySet()) {
                Future<Response> f = i < calls.size() ? calls.get(i) : null;
                if (f == null || !f.succeeded()) {
                    failed.add(key);
                }
                i++;
            }
            for (HistoryCounts.Minute m : taken) {
                if (m.minute() >= oldest && failed.contains(keys.history(m.topic(), hourOf(m.minute())))) {
                    back.add(m);
                }
            }
            // The totals' calls are separate: a total that failed while its topic's call went through
            // is lost for that minute (rather than counting the topic twice when restored).
            counts.restore(back);
            throw e;
        }
        return calls.size();
    }

    private static HistoryCounts.Minute sum(HistoryCounts.Minute a, HistoryCounts.Minute b) {
        long[] bins = a.bins().clone();
        for (int i = 0; i < bins.length; i++) {
            bins[i] += b.bins()[i];
        }
        return new HistoryCounts.Minute(null, a.minute(), a.enqueued() + b.enqueued(), a.succeeded() + b.succeeded(),
                a.failed() + b.failed(), bins);
    }

    private static void add(Map<String, List<String>> byKey, String key, HistoryCounts.Minute m) {
        List<String> args = byKey.computeIfAbsent(key, k -> {
            List<String> a = new ArrayList<>();
            a.add("0"); // no day shards (see history.lua)
            a.add(Long.toString((hourOf(m.minute()) + 1) * 3600 + KEEP_SECONDS));
            return a;
        });
        args.add(Long.toString(Math.floorMod(m.minute(), 60L)));
        args.add(text(m));
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
