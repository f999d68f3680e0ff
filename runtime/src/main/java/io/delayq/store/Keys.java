package io.delayq.store;

import java.time.LocalDate;

import jakarta.enterprise.context.ApplicationScoped;

import io.delayq.core.DelayqConfig;

/**
 * Every Redis key and channel name delayq uses, and nothing else builds them. All keys of a
 * partition carry the hash tag {@code {topic#p}} (the day stays outside the braces), so each
 * script touches one Redis Cluster slot.
 */
@ApplicationScoped
public class Keys {
    private final String prefix;

    public Keys(DelayqConfig config) {
        this.prefix = config.prefix();
    }

    private String base(Partition p) {
        return prefix + ":{" + p.topic() + "#" + p.index() + "}:";
    }

    /** STRING: the number of partitions per topic the store was written with ({@code delayq.partitions}). */
    public String partitions() {
        return prefix + ":partitions";
    }

    /** STRING: a lower bound of the lease deadlines in a partition's inflight set (absent: none). */
    public String leaseNext(Partition p) {
        return base(p) + "leasenext";
    }

    /** SET of every topic that ever had a job enqueued. */
    public String topics() {
        return prefix + ":topics";
    }

    /** HASH job id → record (runAt, attempts, maxAttempts, lastError, payload). */
    public String jobs(Partition p) {
        return base(p) + "jobs";
    }

    /** ZSET of the non-empty day shards, member and score {@code yyyymmdd}. */
    public String days(Partition p) {
        return base(p) + "days";
    }

    /** STRING: a lower bound of the earliest runAt in the partition (absent = nothing scheduled). */
    public String next(Partition p) {
        return base(p) + "next";
    }

    /** ZSET job id → lease deadline ms, for jobs a replica is running. */
    public String inflight(Partition p) {
        return base(p) + "inflight";
    }

    /** HASH job id → lease token of the attempt that holds it. */
    public String leases(Partition p) {
        return base(p) + "leases";
    }

    /** ZSET job id → time of death ms. */
    public String dead(Partition p) {
        return base(p) + "dead";
    }

    /** ZSET job id → runAt ms, for the jobs due on one UTC day ({@code yyyymmdd}). */
    public String due(Partition p, int day) {
        return base(p) + "due:" + day;
    }

    /** Pub/sub channel announcing a new earliest runAt of the partition (message: runAt ms). */
    public String wakeChannel(Partition p) {
        return base(p) + "wake";
    }

    /** The UTC day ({@code yyyymmdd}) of an epoch-ms instant (on every job of a batch: no formatting). */
    public static int dayOf(long epochMs) {
        LocalDate d = LocalDate.ofEpochDay(Math.floorDiv(epochMs, 86_400_000L));
        return d.getYear() * 10_000 + d.getMonthValue() * 100 + d.getDayOfMonth();
    }
}
