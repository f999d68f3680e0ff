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
 * error text, and requeue or purge of exactly the filtered set ({@code deadsweep.lua}). The dead
 * set has no cap (a job stays there until requeued or purged), so nothing here reads it in one
 * go: every script call examines at most {@link #CHUNK} members of one partition, atomically,
 * and Java walks on from the cursor it returns. A filtered list examines at most the newest
 * {@link #LIST_EXAMINED} dead jobs of each partition and says when it stopped there; requeue and
 * purge walk the whole set, chunk by chunk, and touch only jobs that were dead when they were
 * asked (their time of death at or before the Redis time read first).
 */
@Singleton
public class DeadSweep extends StorePart {
    /** Dead-set members one script call examines at most: keeps each call well under a millisecond or two. */
    public static final int CHUNK = 500;
    /** Newest dead jobs of each partition a filtered list examines at most. */
    public static final int LIST_EXAMINED = 10_000;

    @Inject
    public DeadSweep(StoreLayer layer) {
        super(layer);
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
        ensureLayout();
        List<DeadJob> out = new ArrayList<>();
        boolean truncated = false;
        for (Partition p : partitionsOf(topic)) {
            // The newest of this partition; a death during the walk pushes the members down one
            // rank, and a member seen twice is listed once.
            Set<String> seen = new HashSet<>();
            String from = "+inf";
            long kept = 0;
            int examined = 0;
            int found = 0;
            while (true) {
                int n = Math.min(CHUNK, examinedAtMost - examined);
                Response r = run("deadsweep", p, Set.of(), args("list", from, kept, "-inf", n, filter, "", limit - found));
                examined += r.get(3).toInteger();
                for (int i = 5; i + 2 < r.size(); i += 3) {
                    String id = r.get(i).toString();
                    if (seen.add(id)) {
                        out.add(new DeadJob(id, (long) Double.parseDouble(r.get(i + 1).toString()),
                                JobRecord.decode(r.get(i + 2).toString())));
                        found++;
                    }
                }
                boolean done = r.get(0).toInteger() == 1;
                if (done || found >= limit) {
                    break;
                }
                if (examined >= examinedAtMost) {
                    truncated = true;
                    break;
                }
                from = r.get(1).toString();
                kept = r.get(2).toLong();
            }
        }
        out.sort((a, b) -> Long.compare(b.diedAt(), a.diedAt()));
        return new Listing(out.size() > limit ? List.copyOf(out.subList(0, limit)) : out, truncated);
    }

    /** What {@link #sweep} does to the matches. */
    public static final String REQUEUE = "requeue", PURGE = "purge";

    /** Puts every dead job that matches back to scheduled, due now, attempts reset; returns how many. */
    public long requeue(String topic, Filter filter) {
        return sweep(REQUEUE, topic, filter, redisTimeMs(), CHUNK);
    }

    /** Deletes every dead job that matches for good; returns how many. */
    public long purge(String topic, Filter filter) {
        return sweep(PURGE, topic, filter, redisTimeMs(), CHUNK);
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
            long kept = 0;
            for (long call = 0; call <= size / chunk + 1; call++) {
                Response r = step(mode, p, from, kept, diedByMs, chunk, filter);
                acted += r.get(4).toLong();
                if (r.get(0).toInteger() == 1) {
                    break;
                }
                from = r.get(1).toString();
                kept = r.get(2).toLong();
            }
        }
        return acted;
    }

    /**
     * One call of the script ({@code mode} requeue or purge): {done, from, kept, examined, acted}.
     * Public for the script-level tests, which act between two calls.
     */
    public Response step(String mode, Partition p, String from, long kept, long diedByMs, int chunk, Filter filter) {
        return run("deadsweep", p, REQUEUE.equals(mode) ? aroundNow() : Set.of(),
                args(mode, from, kept, Long.toString(diedByMs), chunk, filter, REQUEUE.equals(mode) ? scriptChannel(p) : "",
                        0));
    }

    private static List<String> args(String mode, String from, long kept, String to, int n, Filter filter, String channel,
            int wanted) {
        return List.of(mode, from, Long.toString(kept), to, Integer.toString(n), filter.idPrefix(), filter.error(), channel,
                Integer.toString(wanted));
    }
}
