package io.delayq.store;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.function.Consumer;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * A topic's flow and lifecycle, written by operators and the retention sweep: pause, resume and
 * rate limits (on every partition of the topic), holds asked by its HTTP target, and forgetting a topic that holds no jobs,
 * with the record of when each topic was last in use that retention counts from.
 */
@Singleton
public class TopicAdmin extends StorePart {
    private final TopicListing listing;
    /** Test seam: told "marked", "unlisted" and "cleared" as a forget passes those steps (ForgetTopicTest). */
    private volatile Consumer<String> forgetProbe = step -> {
    };

    @Inject
    public TopicAdmin(StoreLayer layer) {
        super(layer);
        this.listing = layer.listing();
    }

    // ---------------------------------------------------------------- flow control

    /**
     * Pauses the topic: no replica takes its jobs until it is resumed (enqueue still works, and
     * jobs in flight finish as usual). Written to every partition, one script each; a failure
     * half-way leaves some paused: pausing again is harmless.
     */
    public FlowSettings pause(String topic) {
        return flow(topic, "pause", "");
    }

    /** Resumes the topic, and wakes the takers of its partitions so that due jobs go at once. */
    public FlowSettings resume(String topic) {
        return flow(topic, "resume", "");
    }

    /** Sets the topic's rate limit (jobs/s over all replicas), winning over the configuration's. */
    public FlowSettings setRateLimit(String topic, double perSecond) {
        return flow(topic, "rate", Double.toString(perSecond));
    }

    /** Clears the rate limit set by {@link #setRateLimit}: the configuration's applies again. */
    public FlowSettings clearRateLimit(String topic) {
        return flow(topic, "unrate", "");
    }

    /**
     * Sets the topic's group rate limit (jobs/s per group over all replicas), winning over the
     * configuration's; the groups' pace kept under the old limit is dropped.
     */
    public FlowSettings setGroupRateLimit(String topic, double perSecond) {
        return flow(topic, "grouprate", Double.toString(perSecond));
    }

    /** Clears the group rate limit set by {@link #setGroupRateLimit}: the configuration's applies again. */
    public FlowSettings clearGroupRateLimit(String topic) {
        return flow(topic, "ungrouprate", "");
    }

    /**
     * Caps the topic at {@code max} jobs in flight at once over all replicas, winning over the
     * configuration's; takers it held back are woken (a higher cap may let them take now).
     */
    public FlowSettings setMaxInFlight(String topic, int max) {
        return flow(topic, "cap", Integer.toString(max));
    }

    /** Clears the cap set by {@link #setMaxInFlight}: the configuration's (if any) applies again. */
    public FlowSettings clearMaxInFlight(String topic) {
        return flow(topic, "uncap", "");
    }

    /**
     * Holds the topic until {@code untilMs} (Redis epoch ms when {@code absolute}, else a delay
     * from Redis now): no replica takes its jobs before then. What an HTTP target's 429 or 503 with
     * {@code Retry-After} asks; a hold only ever moves later, and ends by itself. Sent to every
     * partition at once, one script each (on a Redis Cluster they are in different slots), each
     * settled on its own: a master that does not answer leaves only its own partitions unheld. The
     * future fails if any partition's write failed.
     */
    public Future<Void> hold(String topic, boolean absolute, long untilMs) {
        String value = absolute ? Long.toString(untilMs) : "+" + untilMs;
        List<Future<Response>> each = new ArrayList<>(partitions);
        for (Partition p : partitionsOf(topic)) {
            try {
                each.add(runAsync("flow", p, Set.of(), List.of("hold", value, scriptChannel(p)), 0, null));
            } catch (RuntimeException e) {
                each.add(Future.failedFuture(e));
            }
        }
        return Future.join(each).mapEmpty();
    }

    private FlowSettings flow(String topic, String what, String value) {
        // Listed (every time: rare, and a topic forgotten since must come back with its new
        // state), so that a topic paused before its first job shows as paused.
        redis.await(listing.sadd(topic));
        List<FlowSettings> each = new ArrayList<>(partitions);
        for (Partition p : partitionsOf(topic)) {
            Response r = run("flow", p, Set.of(), List.of(what, value, scriptChannel(p)));
            String rate = r.get(1).toString();
            String cap = r.get(3).toString();
            String groupRate = r.get(5).toString();
            each.add(new FlowSettings(r.get(0).toLong(), rate.isEmpty() ? null : Double.valueOf(rate), r.get(2).toLong(),
                    cap.isEmpty() ? null : Integer.valueOf(cap), r.get(4).toLong(),
                    groupRate.isEmpty() ? null : Double.valueOf(groupRate)));
        }
        return merged(each);
    }

    /** A topic's settings from those of its partitions, in partition order. */
    private static FlowSettings merged(List<FlowSettings> each) {
        long pausedAt = -1;
        long heldUntil = -1;
        Double rate = null;
        Integer cap = null;
        Double groupRate = null;
        long inflight = 0;
        for (FlowSettings f : each) {
            heldUntil = Math.max(heldUntil, f.heldUntil());
            inflight += f.inflight();
            if (cap == null) {
                cap = f.maxInFlight();
            }
            if (f.paused() && (pausedAt < 0 || f.pausedAt() < pausedAt)) {
                pausedAt = f.pausedAt();
            }
            if (rate == null) {
                rate = f.rateLimit();
            }
            if (groupRate == null) {
                groupRate = f.groupRateLimit();
            }
        }
        return pausedAt < 0 && rate == null && heldUntil < 0 && cap == null && inflight == 0 && groupRate == null
                ? FlowSettings.NONE
                : new FlowSettings(pausedAt, rate, heldUntil, cap, inflight, groupRate);
    }

    /**
     * The flow settings of the given topics: one MGET and one ZCARD (jobs in flight) per partition,
     * all sent at once.
     */
    public Map<String, FlowSettings> flows(Collection<String> topics) {
        return flows(topics, Map.of());
    }

    /**
     * As {@link #flows(Collection)}, for a caller that has just counted the jobs in flight of some
     * of the topics ({@link Inspection#topics()}, summed over partitions): those counts are used,
     * and their partitions' ZCARDs are not sent again.
     */
    public Map<String, FlowSettings> flows(Collection<String> topics, Map<String, Long> inflightKnown) {
        Map<String, FlowSettings> out = new LinkedHashMap<>();
        if (topics.isEmpty()) {
            return out;
        }
        ensureLayout();
        List<Request> reads = new ArrayList<>(topics.size() * partitions * 2);
        for (String topic : topics) {
            boolean count = !inflightKnown.containsKey(topic);
            for (Partition p : partitionsOf(topic)) {
                reads.add(Request.cmd(Command.MGET).arg(keys.paused(p)).arg(keys.rateLimit(p)).arg(keys.held(p))
                        .arg(keys.maxInFlight(p)).arg(keys.groupRateLimit(p)));
                if (count) {
                    reads.add(Request.cmd(Command.ZCARD).arg(keys.inflight(p)));
                }
            }
        }
        List<Response> replies = readAll(reads);
        int i = 0;
        for (String topic : topics) {
            Long known = inflightKnown.get(topic);
            List<FlowSettings> each = new ArrayList<>(partitions);
            for (int p = 0; p < partitions; p++) {
                Response four = replies.get(i++);
                long inflight = known == null ? replies.get(i++).toLong() : p == 0 ? known : 0;
                each.add(new FlowSettings(four.get(0) == null ? -1 : four.get(0).toLong(),
                        four.get(1) == null ? null : Double.valueOf(four.get(1).toString()),
                        four.get(2) == null ? -1 : four.get(2).toLong(),
                        four.get(3) == null ? null : Integer.valueOf(four.get(3).toString()),
                        inflight,
                        four.get(4) == null ? null : Double.valueOf(four.get(4).toString())));
            }
            out.put(topic, merged(each));
        }
        return out;
    }

    /** The topic's rate limit in this replica's configuration (jobs/s), empty when none. */
    public OptionalDouble configuredRateLimit(String topic) {
        Double rate = rateLimits.get(topic);
        return rate == null ? OptionalDouble.empty() : OptionalDouble.of(rate);
    }

    /** The topic's group rate limit in this replica's configuration (jobs/s per group), empty when none. */
    public OptionalDouble configuredGroupRateLimit(String topic) {
        Double rate = groupRateLimits.get(topic);
        return rate == null ? OptionalDouble.empty() : OptionalDouble.of(rate);
    }

    /** The topic's concurrency cap in this replica's configuration, empty when none. */
    public java.util.OptionalInt configuredMaxInFlight(String topic) {
        Integer cap = maxInFlights.get(topic);
        return cap == null ? java.util.OptionalInt.empty() : java.util.OptionalInt.of(cap);
    }

    /** The partition count per topic ({@code delayq.partitions}): a concurrency cap is divided over them. */
    public int partitionCount() {
        return partitions;
    }

    // ---------------------------------------------------------------- forgetting topics

    /**
     * What {@link #forget} did; the counts are the topic's jobs and its dead-job callbacks still to
     * send when it {@link Outcome#HAS_JOBS}.
     */
    public record Forgetting(Outcome outcome, long jobs, long inflight, long dead, long callbacks) {
        public enum Outcome {
            /** Taken out of the topics SET, its partitions' keys deleted. */
            FORGOTTEN,
            /** Not in the topics SET. */
            UNKNOWN,
            /** Holds jobs (scheduled, in flight or dead) or callbacks still to send: left as it was. */
            HAS_JOBS,
            /** A job came in while it was being forgotten: listed again, with that job. */
            IN_USE_AGAIN
        }
    }

    /**
     * Forgets a topic that holds no jobs: takes it out of the topics SET, and deletes what its
     * partitions keep (flow state, rate-limit pace, tick records, dedup ids). Whether a replica
     * serves it is the caller's question. An enqueue racing with it is never lost (see
     * forget.lua): its job is stored and its topic listed again, and this answers
     * {@link Forgetting.Outcome#IN_USE_AGAIN} (some partitions' state may be gone then).
     */
    public Forgetting forget(String topic) {
        ensureLayout();
        if (redis.send(Request.cmd(Command.SISMEMBER).arg(keys.topics()).arg(topic)).toInteger() == 0) {
            return new Forgetting(Forgetting.Outcome.UNKNOWN, 0, 0, 0, 0);
        }
        long[] held = forgetStep(topic, "mark");
        if (held[0] > 0 || held[3] > 0) {
            return new Forgetting(Forgetting.Outcome.HAS_JOBS, held[0] - held[1] - held[2], held[1], held[2], held[3]);
        }
        forgetProbe.accept("marked");
        redis.send(Request.cmd(Command.SREM).arg(keys.topics()).arg(topic));
        forgetProbe.accept("unlisted");
        long[] after = forgetStep(topic, "clear");
        if (after[0] != 0) {
            redis.send(Request.cmd(Command.SADD).arg(keys.topics()).arg(topic));
            return new Forgetting(Forgetting.Outcome.IN_USE_AGAIN, 0, 0, 0, 0);
        }
        // From here on, an enqueue by a replica that still believes the topic listed is listed
        // again by the partition's mark alone (this replica's belief is dropped last, so that the
        // tests can enqueue as such a replica would).
        forgetProbe.accept("cleared");
        redis.send(Request.cmd(Command.HDEL).arg(keys.topicsActive()).arg(topic));
        listing.forgotten(topic);
        return new Forgetting(Forgetting.Outcome.FORGOTTEN, 0, 0, 0, 0);
    }

    /**
     * One step of forget.lua on every partition: {jobs, inflight, dead, callbacks} summed, jobs -1 when
     * (a step "clear" found that) a job came in meanwhile.
     */
    private long[] forgetStep(String topic, String step) {
        long[] sum = new long[4];
        boolean again = false;
        for (Partition p : partitionsOf(topic)) {
            // With the result retention's keys, whatever this replica's configuration: kept
            // successes go with their topic.
            Response r = redis.await(runAsync("forget", p, Set.of(), List.of(step, Long.toString(TopicListing.FORGOTTEN_MARK_MS)),
                    0, null, false, true));
            long jobs = r.get(0).toLong();
            again |= jobs != 0;
            sum[0] += Math.max(0, jobs);
            sum[1] += r.get(1).toLong();
            sum[2] += r.get(2).toLong();
            sum[3] += r.get(3).toLong();
        }
        if (again && sum[0] == 0) {
            sum[0] = -1;
        }
        return sum;
    }

    /** Test seam: {@code probe} is told "marked", "unlisted" and "cleared" as a forget passes those steps. */
    public void forgetProbe(Consumer<String> probe) {
        this.forgetProbe = probe == null ? step -> {
        } : probe;
    }

    /**
     * Whether a topic is in use now (a partition holds jobs, remembered dedup ids or kept successes), and the
     * Redis time (ms) it was last seen in use ({@link Keys#topicsActive()}), -1 when never: one
     * round trip, one EXISTS per partition.
     */
    public record Activity(boolean inUse, long lastActiveMs) {
    }

    /** A topic's {@link Activity}. */
    public Activity activity(String topic) {
        ensureLayout();
        List<Request> reads = new ArrayList<>(partitions + 1);
        reads.add(Request.cmd(Command.HGET).arg(keys.topicsActive()).arg(topic));
        for (Partition p : partitionsOf(topic)) {
            // Kept successes too (result-retention): an idle topic keeps them as long as it says,
            // not only delayq.topics-retention.
            reads.add(Request.cmd(Command.EXISTS).arg(keys.jobs(p)).arg(keys.done(p)).arg(keys.succeeded(p)));
        }
        List<Response> r = readAll(reads);
        boolean inUse = false;
        for (int i = 1; i < r.size(); i++) {
            inUse |= r.get(i).toLong() > 0;
        }
        return new Activity(inUse, r.get(0) == null ? -1 : r.get(0).toLong());
    }

    /** Records that a topic was in use at Redis time {@code nowMs} (see {@link Keys#topicsActive()}). */
    public void markActive(String topic, long nowMs) {
        redis.send(Request.cmd(Command.HSET).arg(keys.topicsActive()).arg(topic).arg(nowMs));
    }

    /**
     * Drops the {@link Keys#topicsActive()} entries of topics not in the topics SET whose time is
     * older than {@code beforeMs} (a served topic that never had a job, no longer served); returns
     * how many. It reads the whole hash: for the end of a round over the topics, not every minute.
     */
    public int dropStaleActivity(long beforeMs) {
        List<String> stale = new ArrayList<>();
        pairs(redis.send(Request.cmd(Command.HGETALL).arg(keys.topicsActive()))).forEach((topic, at) -> {
            if (Long.parseLong(at) < beforeMs) {
                stale.add(topic);
            }
        });
        if (stale.isEmpty()) {
            return 0;
        }
        Request listed = Request.cmd(Command.SMISMEMBER).arg(keys.topics());
        stale.forEach(listed::arg);
        Response member = redis.send(listed);
        Request drop = Request.cmd(Command.HDEL).arg(keys.topicsActive());
        int n = 0;
        for (int i = 0; i < stale.size(); i++) {
            if (member.get(i).toInteger() == 0) {
                drop.arg(stale.get(i));
                n++;
            }
        }
        if (n > 0) {
            redis.send(drop);
        }
        return n;
    }

    /** A page of the topics SET (SSCAN): the names, and the cursor to go on from ("0": the end). */
    public record TopicPage(String cursor, List<String> topics) {
    }

    /** The next page of the topics SET after {@code cursor} ("0" to begin), about {@code count} names. */
    public TopicPage scanTopics(String cursor, int count) {
        Response r = redis.send(Request.cmd(Command.SSCAN).arg(keys.topics()).arg(cursor).arg("COUNT").arg(count));
        List<String> names = new ArrayList<>();
        r.get(1).forEach(n -> names.add(n.toString()));
        return new TopicPage(r.get(0).toString(), names);
    }
}
