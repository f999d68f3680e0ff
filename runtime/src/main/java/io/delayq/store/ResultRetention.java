package io.delayq.store;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.delayq.core.DelayqConfig;

/**
 * Result retention ({@code delayq.topics.<t>.result-retention}, {@code delayq.results.max-jobs}):
 * which topics keep their succeeded jobs readable, what the ack scripts are told of it (lib.lua's
 * ack_leases and keep_results), and the results of acks not yet in Redis. A result travels with its
 * ack, in the same script call that moves the job out of flight: there is no step where a job is
 * acked and its result not yet written, or the reverse.
 */
public final class ResultRetention {
    /** A result field as the scripts take it: no result. */
    static final String NONE = "";
    private final Map<String, Long> retentionMs = new HashMap<>();
    private final int maxJobs;
    private final int partitions;
    private final RedisGateway redis;
    /** The results of acks queued or in flight, until their ack is in Redis (or known stale). */
    private final Map<Lease, String> staged = new ConcurrentHashMap<>();

    ResultRetention(DelayqConfig config, int partitions, RedisGateway redis) {
        this.partitions = partitions;
        this.redis = redis;
        this.maxJobs = config.results().maxJobs();
        if (maxJobs < 0) {
            throw new IllegalStateException("delayq.results.max-jobs must be 0 (no bound) or more, not " + maxJobs);
        }
        config.topics().forEach((topic, t) -> t.resultRetention().ifPresent(d -> {
            if (d.isNegative()) {
                throw new IllegalStateException("delayq.topics." + topic + ".result-retention must be 0 (off) or more, not " + d);
            }
            if (d.toMillis() > 0) {
                retentionMs.put(topic, d.toMillis());
            }
        }));
    }

    /** Whether the topic keeps its succeeded jobs (a result set for another topic is not kept). */
    public boolean keeps(String topic) {
        return retentionMs.containsKey(topic);
    }

    /** The topic's retention in ms; 0 = none. */
    long retentionMs(String topic) {
        return retentionMs.getOrDefault(topic, 0L);
    }

    /** The topic's retention, for readers (the listing, the dashboard); zero when none. */
    public Duration retention(String topic) {
        return Duration.ofMillis(retentionMs(topic));
    }

    /** The succeeded jobs one partition of the topic keeps: its share of max-jobs, rounded up; 0 = no bound. */
    int keep() {
        return maxJobs == 0 ? 0 : (maxJobs + partitions - 1) / partitions;
    }

    /**
     * What an ack of the partition tells its script of the retention: "" for none, else
     * "{@code <jobs kept>,<retention ms>}", with "{@code ,full}" while Redis is full: nothing is
     * kept then (the ack, allow-oom, still completes the job; writes that only add are skipped, the
     * gateway's WARN says so), but the acked ids' entries of earlier jobs go, and the trims run.
     */
    String spec(Partition p) {
        long ms = retentionMs(p.topic());
        return ms == 0 ? "" : keep() + "," + ms + (redis.isFull() ? ",full" : "");
    }

    /** Keeps {@code field} ({@link #kept}, {@link #dropped}, {@link #cut}) for the ack of {@code lease}. */
    void stage(Lease lease, String field) {
        staged.put(lease, field);
    }

    /** The field staged for the ack of {@code lease}; null for none. */
    String staged(Lease lease) {
        return staged.isEmpty() ? null : staged.get(lease);
    }

    /** Forgets the results of acks that reached Redis. */
    void settled(Collection<Lease> leases) {
        if (!staged.isEmpty()) {
            leases.forEach(staged::remove);
        }
    }

    /**
     * Adds acks to a script's arguments as lib.lua's ack_leases reads them: without a retention
     * n, then n (id, token) pairs, as ever; with one -n, the retention, then n (id, token, result)
     * triples.
     */
    void addAcks(List<String> args, Partition p, List<Lease> acks) {
        String spec = spec(p);
        if (spec.isEmpty() || acks.isEmpty()) {
            StorePart.addLeases(args, acks);
            return;
        }
        args.add(Integer.toString(-acks.size()));
        args.add(spec);
        for (Lease l : acks) {
            args.add(l.id());
            args.add(l.token());
            args.add(staged.getOrDefault(l, NONE));
        }
    }

    /**
     * The field of a result kept: its JSON, on one line. A line break in JSON is whitespace (one
     * inside a string is escaped), so it is blanked: Jackson writes none when told to be compact,
     * but a raw value ({@code @JsonRawValue}) may hold one, and the kept entry is split at them.
     */
    public static String kept(String json) {
        return "=" + oneLine(json);
    }

    private static String oneLine(String json) {
        return json.indexOf('\n') < 0 && json.indexOf('\r') < 0 ? json : json.replace('\n', ' ').replace('\r', ' ');
    }

    /** The field of a result larger than the payload limit: dropped, the job flagged. */
    public static String dropped() {
        return "!";
    }

    /** The field of an HTTP target's body cut at the payload limit: a JSON string, flagged. */
    public static String cut(String jsonString) {
        return "~" + oneLine(jsonString);
    }
}
