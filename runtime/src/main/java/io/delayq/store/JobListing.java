package io.delayq.store;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.vertx.core.Future;
import io.vertx.redis.client.Response;

/**
 * A topic's jobs in one state, page by page ({@code GET /topics/{t}/jobs}): scheduled ones in
 * runAt order (those their group holds back first, by group then runAt: they are due already),
 * in-flight ones by id, dead ones newest first. One {@code list.lua} call per partition per page,
 * each examining at most {@link #EXAMINED} entries, all partitions at once; the pages are merged
 * in order, up to the point every partition has examined (its frontier), so a page may be short
 * while more is left. The cursor holds each partition's position (the last entry accounted for;
 * an entry is identified by its place in the order, not by a Redis SCAN cursor), so following it
 * returns every job that stayed in the state (unmoved) from the first page to the last exactly
 * once, whatever was added or removed meanwhile, on a cluster too (each call is one partition's
 * slot). Kept apart from the job path as {@link Inspection} is.
 */
@Singleton
public class JobListing extends StorePart {
    /** Entries of one partition a call examines at most, matching or not. */
    public static final int EXAMINED = 1000;
    /** The most jobs a page holds, and with payloads. */
    public static final int MAX_LIMIT = 1000, MAX_FULL_LIMIT = 100;
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder UNB64 = Base64.getUrlDecoder();

    @Inject
    public JobListing(StoreLayer layer) {
        super(layer);
    }

    /** Which jobs: id prefix, group ({@code null} = any), runAt within [from, to] ms ({@code null} = unbounded). */
    public record Filter(String idPrefix, String group, Long from, Long to) {
        public static final Filter ALL = new Filter(null, null, null, null);
    }

    /** A listed job: what {@code GET /jobs/{t}/{id}} answers, and its payload when asked for. */
    public record Listed(JobInfo info, String payload) {
    }

    /** One page, and the cursor of the next (null: the listing is complete). */
    public record Page(List<Listed> jobs, String cursor) {
    }

    /** A cursor that is not one this class made for this state and partition count. */
    public static final class BadCursor extends IllegalArgumentException {
        BadCursor(String message) {
            super(message);
        }
    }

    /**
     * One page of the topic's jobs in {@code state}.
     *
     * @param limit 1 to {@link #MAX_LIMIT} jobs
     * @param full with the payloads
     * @param cursor null for the first page, else the previous page's cursor
     * @throws BadCursor when the cursor is not one of a listing of this state
     */
    public Page list(String topic, JobState state, Filter filter, int limit, boolean full, String cursor) {
        long retention = layer.results().retentionMs(topic);
        if (state == JobState.SUCCEEDED && retention == 0) {
            // No result retention: nothing is kept of a succeeded job but a dedup id.
            return new Page(List.of(), null);
        }
        String mode = switch (state) {
            case SCHEDULED -> "s";
            case INFLIGHT -> "i";
            case SUCCEEDED -> "r";
            default -> "d";
        };
        Key[] at = cursor == null ? new Key[partitions] : decode(cursor, mode);
        boolean[] done = new boolean[partitions];
        if (cursor != null) {
            for (int i = 0; i < partitions; i++) {
                done[i] = at[i] == null;
            }
        }
        // Succeeded: those the retention keeps, as get.lua reads them (Redis time, read once for
        // every partition; the entries past it go at the partition's next ack, or with its keys).
        String oldest = mode.equals("r") ? Long.toString(redisTimeMs() - retention) : "";
        List<Integer> asked = new ArrayList<>();
        List<Future<Response>> calls = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            if (done[i]) {
                continue;
            }
            Key from = at[i] == null ? Key.START : at[i];
            Set<Integer> days = new TreeSet<>();
            if (mode.equals("s")) {
                aroundDay(days, from.score != null ? from.score : filter.from() != null ? filter.from()
                        : System.currentTimeMillis());
            }
            asked.add(i);
            calls.add(runAsync("list", new Partition(topic, i), days, List.of(mode, Integer.toString(limit),
                    Integer.toString(EXAMINED), text(filter.idPrefix()), text(filter.group()), text(filter.from()),
                    text(filter.to()), full ? "1" : "0", from.phase, from.score == null ? "" : Long.toString(from.score),
                    from.member, oldest), 0, null, false, mode.equals("r")));
        }
        Comparator<Key> order = order(mode);
        Key frontier = null;
        boolean[] exhausted = new boolean[partitions];
        List<Entry> found = new ArrayList<>();
        for (int c = 0; c < calls.size(); c++) {
            int i = asked.get(c);
            Response r = redis.await(calls.get(c));
            exhausted[i] = r.get(0).toInteger() == 1;
            Key last = new Key(r.get(1).toString(), score(r.get(2).toString()), r.get(3).toString());
            if (!exhausted[i] && (frontier == null || order.compare(last, frontier) < 0)) {
                frontier = last;
            }
            for (int j = 4; j + 3 < r.size(); j += 4) {
                String id = r.get(j).toString(), mark = r.get(j + 2).toString();
                // The mark: a held job's gheld member, or the lane phase of a lane's job, when
                // scheduled; "x" (cancelling) when in flight.
                boolean lane = mode.equals("s") && LANE_PHASES.contains(mark);
                boolean held = mode.equals("s") && !mark.isEmpty() && !lane;
                Key key = held ? new Key("h", null, mark)
                        : new Key(lane ? mark : mode.equals("s") ? "d" : "", score(r.get(j + 1).toString()), id);
                found.add(new Entry(i, key, id, JobRecord.decode(r.get(j + 3).toString()),
                        mode.equals("i") && JobState.cancellingLetter(mark), mode.equals("r") ? mark : null));
            }
        }
        Key bound = frontier;
        List<Entry> page = new ArrayList<>(found.stream().filter(e -> bound == null || order.compare(e.key, bound) <= 0)
                .sorted((a, b) -> order.compare(a.key, b.key)).toList());
        if (page.size() > limit) {
            page = page.subList(0, limit);
        }
        Key cut = page.size() == limit ? page.get(page.size() - 1).key : frontier;
        Key[] next = new Key[partitions];
        boolean more = false;
        for (int i : asked) {
            int p = i;
            if (cut != null && (!exhausted[i]
                    || found.stream().anyMatch(e -> e.partition == p && order.compare(e.key, cut) > 0))) {
                next[i] = cut;
                more = true;
            }
        }
        List<Listed> jobs = new ArrayList<>(page.size());
        for (Entry e : page) {
            jobs.add(listed(topic, state, e, full));
        }
        return new Page(jobs, more ? encode(mode, next) : null);
    }

    private static Listed listed(String topic, JobState state, Entry e, boolean full) {
        if (e.result != null) {
            // A kept success: as GET answers it, from its results entry's parts; its result, as its
            // payload, only with fields=full (list.lua sends the flag alone else).
            JobInfo info = Inspection.kept(topic, e.id, e.key.score, e.result.isEmpty() ? '-' : e.result.charAt(0),
                    full && !e.result.isEmpty() ? e.result.substring(1) : null, e.record).info();
            return new Listed(info, full ? e.record.payloadOrNull() : null);
        }
        Instant deadAt = state == JobState.DEAD ? Instant.ofEpochMilli(e.key.score) : null;
        Boolean held = e.key.phase.equals("h") ? Boolean.TRUE : null;
        return new Listed(Inspection.info(topic, e.id, e.record, state, deadAt, held, e.cancelling ? Boolean.TRUE : null),
                full ? e.record.payloadOrNull() : null);
    }

    /** The phases of the lanes' shards (priorities 1, 2, 4, 5; see list.lua), in list.lua's order after 'd'. */
    private static final List<String> LANE_PHASES = List.of("l1", "l2", "l4", "l5");

    /**
     * A place in a state's order: phase ('h' held, 'd' day shards, 'l1' .. 'l5' a lane's shards;
     * '' outside scheduled), score, member.
     */
    private record Key(String phase, Long score, String member) {
        static final Key START = new Key("", null, "");
    }

    /** result: for a kept success, its flag and result JSON (see lib.lua's keep_results); else null. */
    private record Entry(int partition, Key key, String id, JobRecord record, boolean cancelling, String result) {
    }

    /**
     * The order of a state, as list.lua walks it: scheduled held jobs (by gheld member) before
     * those of the day shards (runAt, then id); in flight by id; dead by time of death then id,
     * both descending. Strings compare as Java does, which for these ASCII ids and members is
     * byte order, as Redis sorts them.
     */
    private static Comparator<Key> order(String mode) {
        Comparator<Long> scores = Comparator.nullsFirst(Comparator.naturalOrder());
        return switch (mode) {
            case "s" -> Comparator.comparing((Key k) -> k.phase.equals("h") ? 0 : 2 + LANE_PHASES.indexOf(k.phase))
                    .thenComparing(Key::score, scores).thenComparing(Key::member);
            case "i" -> Comparator.comparing(Key::member);
            default -> Comparator.comparing(Key::score, scores).thenComparing(Key::member).reversed();
        };
    }

    private static Long score(String s) {
        return s.isEmpty() ? null : (long) Double.parseDouble(s);
    }

    /** A filter's part as the scripts take it: '' for none. */
    static String text(Object o) {
        return o == null ? "" : o.toString();
    }

    /**
     * The cursor: base64url of {@code 1|<state letter>|<partitions>|<position>|...}, a position
     * being {@code -} for a partition done, else {@code <phase or _>.<score or nothing>.<member,
     * base64url>}.
     */
    private String encode(String mode, Key[] at) {
        StringBuilder b = new StringBuilder("1|").append(mode).append('|').append(partitions);
        for (Key k : at) {
            b.append('|');
            if (k == null) {
                b.append('-');
            } else {
                b.append(k.phase.isEmpty() ? "_" : k.phase).append('.').append(k.score == null ? "" : k.score).append('.')
                        .append(B64.encodeToString(k.member.getBytes(StandardCharsets.UTF_8)));
            }
        }
        return B64.encodeToString(b.toString().getBytes(StandardCharsets.UTF_8));
    }

    private Key[] decode(String cursor, String mode) {
        try {
            String[] parts = new String(UNB64.decode(cursor), StandardCharsets.UTF_8).split("\\|", -1);
            if (parts.length != 3 + partitions || !parts[0].equals("1") || !parts[2].equals(Integer.toString(partitions))) {
                throw new BadCursor("cursor is not one this server gave (or the topic's partitions changed since)");
            }
            if (!parts[1].equals(mode)) {
                throw new BadCursor("cursor belongs to a listing of another state");
            }
            Key[] at = new Key[partitions];
            for (int i = 0; i < partitions; i++) {
                String p = parts[3 + i];
                if (p.equals("-")) {
                    continue;
                }
                String[] f = p.split("\\.", -1);
                String phase = f[0].equals("_") ? "" : f[0];
                if (f.length != 3 || !(phase.isEmpty() || phase.equals("h") || phase.equals("d") || LANE_PHASES.contains(phase))) {
                    throw new BadCursor("cursor is malformed");
                }
                at[i] = new Key(phase, f[1].isEmpty() ? null : Long.parseLong(f[1]),
                        new String(UNB64.decode(f[2]), StandardCharsets.UTF_8));
            }
            return at;
        } catch (IllegalArgumentException e) {
            throw e instanceof BadCursor bad ? bad : new BadCursor("cursor is malformed");
        }
    }
}
