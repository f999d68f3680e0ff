package io.delayq.store;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * The operator's tools over a topic's dead set as a whole: dead jobs filtered by id prefix and
 * error text, and requeue or purge of exactly the filtered set ({@code deadsweep.lua}); and the
 * retention sweep ({@link #trim}). The dead set is bounded ({@code delayq.dead.max-jobs}, 10000 by
 * default) but can still be large, so nothing here reads it in one go: every script call examines at most {@link #CHUNK} members of one partition ({@link #ACT_CHUNK}
 * for a requeue or purge), atomically,
 * and Java walks on from the cursor it returns. A filtered list examines at most the newest
 * {@link #LIST_EXAMINED} dead jobs of each partition and says when it stopped there; requeue and
 * purge walk the whole set, chunk by chunk, and touch only jobs that were dead when they were
 * asked (their time of death at or before the Redis time read first).
 */
@Singleton
public class DeadSweep extends StorePart {
    /**
     * Dead-set members one call of a list or count examines at most (reads: about 2-3 ms a call
     * measured on a loaded 2-core machine).
     */
    public static final int CHUNK = 500;
    /**
     * Dead-set members one call of a requeue or purge examines at most: a requeue writes about
     * eight commands per job, so its calls are kept smaller (about 4 ms a call on that machine)
     * for Redis to serve takes and acks between them.
     */
    public static final int ACT_CHUNK = 200;
    /** Newest dead jobs of each partition a filtered list examines at most. */
    public static final int LIST_EXAMINED = 10_000;

    private final IdClaims claims;

    @Inject
    public DeadSweep(StoreLayer layer) {
        super(layer);
        this.claims = new IdClaims(layer);
    }

    /**
     * Drops the topic's stale id claims (see {@link Keys#claims}): those whose job of a group left
     * its partition with no enqueue of its id since. Nothing with one partition. Returns how many.
     */
    public long sweepClaims(String topic) {
        return claims.sweep(topic);
    }

    /**
     * Which dead jobs: those whose id starts with {@code idPrefix} and whose last error contains
     * {@code error} (ASCII letters compared without case); a null or empty part matches any.
     */
    public record Filter(String idPrefix, String error) {
        public static final Filter ALL = new Filter(null, null);

        public Filter {
            idPrefix = idPrefix == null ? "" : idPrefix;
            error = error == null ? "" : error;
        }

        public boolean all() {
            return idPrefix.isEmpty() && error.isEmpty();
        }
    }

    /**
     * Dead jobs that match, newest first, at most {@code limit}; {@code truncated} when a
     * partition had more than {@link #LIST_EXAMINED} dead jobs and fewer than {@code limit}
     * matches were found among its newest: older ones may match too.
     */
    public record Listing(List<DeadJob> jobs, boolean truncated) {
    }

    /** See {@link Listing}. */
    public Listing list(String topic, Filter filter, int limit) {
        return list(topic, filter, limit, LIST_EXAMINED);
    }

    /** As {@link #list(String, Filter, int)}, examining at most {@code examinedAtMost} per partition (tests). */
    public Listing list(String topic, Filter filter, int limit, int examinedAtMost) {
        List<DeadJob> out = new ArrayList<>();
        boolean truncated = walkNewest(topic, filter, limit, examinedAtMost, out);
        out.sort((a, b) -> Long.compare(b.diedAt(), a.diedAt()));
        return new Listing(out.size() > limit ? List.copyOf(out.subList(0, limit)) : out, truncated);
    }

    /**
     * How many dead jobs match among the newest {@link #LIST_EXAMINED} of each partition (what the
     * dashboard shows on its "filtered" buttons); {@code truncated} when a partition has more, so
     * that the count is a lower bound.
     */
    public record Count(long matching, boolean truncated) {
    }

    /** See {@link Count}. */
    public Count count(String topic, Filter filter) {
        return count(topic, filter, LIST_EXAMINED);
    }

    /** As {@link #count(String, Filter)}, examining at most {@code examinedAtMost} per partition (tests). */
    public Count count(String topic, Filter filter, int examinedAtMost) {
        long[] matching = new long[1];
        boolean truncated = walkNewestCounting(topic, filter, examinedAtMost, matching);
        return new Count(matching[0], truncated);
    }

    /**
     * Walks each partition newest first, {@link #CHUNK} members a call, until it has {@code limit}
     * matches there, reached the oldest, or examined {@code examinedAtMost}; returns whether a
     * partition stopped at that bound short of {@code limit}.
     */
    private boolean walkNewest(String topic, Filter filter, int limit, int examinedAtMost, List<DeadJob> out) {
        ensureLayout();
        boolean truncated = false;
        for (Partition p : partitionsOf(topic)) {
            // A member of the cursor's score that dies again during the walk could be seen twice:
            // it is listed once.
            Set<String> seen = new HashSet<>();
            String from = "+inf";
            String after = "";
            int examined = 0;
            int found = 0;
            while (true) {
                int n = Math.min(CHUNK, examinedAtMost - examined);
                Response r = run("deadsweep", p, Set.of(), args("list", from, after, "-inf", n, filter, "", limit - found));
                examined += r.get(3).toInteger();
                for (int i = 5; i + 2 < r.size(); i += 3) {
                    String id = r.get(i).toString();
                    if (seen.add(id)) {
                        out.add(new DeadJob(id, (long) Double.parseDouble(r.get(i + 1).toString()),
                                JobRecord.decode(r.get(i + 2).toString())));
                        found++;
                    }
                }
                if (r.get(0).toInteger() == 1 || found >= limit) {
                    break;
                }
                if (examined >= examinedAtMost) {
                    truncated = true;
                    break;
                }
                from = r.get(1).toString();
                after = r.get(2).toString();
            }
        }
        return truncated;
    }

    /** As {@link #walkNewest}, counting the matches instead of reading them. */
    private boolean walkNewestCounting(String topic, Filter filter, int examinedAtMost, long[] matching) {
        ensureLayout();
        boolean truncated = false;
        for (Partition p : partitionsOf(topic)) {
            String from = "+inf";
            String after = "";
            int examined = 0;
            while (true) {
                int n = Math.min(CHUNK, examinedAtMost - examined);
                Response r = run("deadsweep", p, Set.of(), args("count", from, after, "-inf", n, filter, "", 0));
                examined += r.get(3).toInteger();
                matching[0] += r.get(4).toLong();
                if (r.get(0).toInteger() == 1) {
                    break;
                }
                if (examined >= examinedAtMost) {
                    truncated = true;
                    break;
                }
                from = r.get(1).toString();
                after = r.get(2).toString();
            }
        }
        return truncated;
    }

    /** What {@link #sweep} does to the matches. */
    public static final String REQUEUE = "requeue", PURGE = "purge";

    /** Puts every dead job that matches back to scheduled, due now, attempts reset; returns how many. */
    public long requeue(String topic, Filter filter) {
        return sweep(REQUEUE, topic, filter, redisTimeMs(), ACT_CHUNK);
    }

    /** Deletes every dead job that matches for good; returns how many. */
    public long purge(String topic, Filter filter) {
        return sweep(PURGE, topic, filter, redisTimeMs(), ACT_CHUNK);
    }

    /**
     * Walks each partition's dead set oldest first up to {@code diedByMs}, {@code chunk} members
     * per script call, acting on the matches. The walk ends when it reaches jobs that died after
     * {@code diedByMs}; the number of calls is bounded too (by the set's size when the walk
     * began), so a fault in the cursor cannot make it endless.
     */
    public long sweep(String mode, String topic, Filter filter, long diedByMs, int chunk) {
        ensureLayout();
        long acted = 0;
        for (Partition p : partitionsOf(topic)) {
            long size = redis.send(Request.cmd(Command.ZCARD).arg(keys.dead(p))).toLong();
            String from = "-inf";
            String after = "";
            for (long call = 0; call <= size / chunk + 1; call++) {
                Response r = step(mode, p, from, after, diedByMs, chunk, filter);
                acted += r.get(4).toLong();
                if (r.get(0).toInteger() == 1) {
                    break;
                }
                from = r.get(1).toString();
                after = r.get(2).toString();
            }
        }
        return acted;
    }

    /**
     * One call of the script ({@code mode} requeue or purge): {done, from, after, examined, acted},
     * the cursor being a score and the last member of that score left in place ({@code ""}: none).
     * Public for the script-level tests, which act between two calls.
     */
    public Response step(String mode, Partition p, String from, String after, long diedByMs, int chunk, Filter filter) {
        // A requeue gets the claims (several partitions): a dead job whose id is claimed stays (revive_dead).
        return redis.await(runAsync("deadsweep", p, REQUEUE.equals(mode) ? aroundNowAllLanes() : Set.of(),
                args(mode, from, after, Long.toString(diedByMs), chunk, filter, REQUEUE.equals(mode) ? scriptChannel(p) : "",
                        0), 0, null, partitions > 1 && REQUEUE.equals(mode)));
    }

    /** Dead jobs (and failed callbacks) one retention call removes at most, per partition. */
    public static final int TRIM_CHUNK = 200;
    /** Retention calls per partition and sweep at most: a backlog goes over a few sweeps. */
    private static final int TRIM_CALLS = 25;

    /**
     * Retention: removes the topic's dead jobs and failed dead-job callbacks past its bounds
     * ({@code delayq.dead.max-age}, and {@code max-jobs} for a set that grew over a lowered cap),
     * oldest first, {@link #TRIM_CHUNK} a call per partition while calls remove that many. The
     * ids removed go to the retention's counter and log, as a burial's do. Returns how many dead
     * jobs it removed.
     */
    public long trim(String topic) {
        ensureLayout();
        int keep = layer.deadKeep(topic);
        long maxAge = layer.deadMaxAgeMs(topic);
        if (keep == 0 && maxAge == 0) {
            return 0;
        }
        long removed = 0;
        for (Partition p : partitionsOf(topic)) {
            for (int call = 0; call < TRIM_CALLS; call++) {
                Response r = run("deadsweep", p, Set.of(), List.of("trim", Integer.toString(keep), Long.toString(maxAge),
                        Integer.toString(TRIM_CHUNK)));
                layer.trimmed(p, r, 1);
                removed += r.size() - 1;
                if (r.size() - 1 < TRIM_CHUNK && r.get(0).toInteger() < TRIM_CHUNK) {
                    break;
                }
            }
        }
        return removed;
    }

    /** Who to tell of the dead jobs trimmed from a topic's dead set, by a burial or the sweep. */
    public void onTrimmed(java.util.function.BiConsumer<String, List<String>> listener) {
        layer.onDeadTrimmed(listener);
    }

    /**
     * Who to tell of the jobs any script of this replica sent to the dead set because their
     * expiresAt passed (a take, a retry, a snooze, a reclaim, a reschedule, a replace or extend).
     */
    public void onExpired(java.util.function.ObjIntConsumer<String> listener) {
        layer.onExpired(listener);
    }

    private static List<String> args(String mode, String from, String after, String to, int n, Filter filter, String channel,
            int wanted) {
        return List.of(mode, from, after, to, Integer.toString(n), filter.idPrefix(), filter.error(), channel,
                Integer.toString(wanted));
    }
}
