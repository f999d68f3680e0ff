package io.delayq.store;

import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import io.delayq.core.DelayqConfig;

/**
 * Every Redis key and channel name delayq uses, and nothing else builds them. All keys of a
 * partition carry one hash tag (the day stays outside the braces), so each script touches one
 * Redis Cluster slot.
 *
 * <p>The tag of partition p of P is {@code {topic#p}} when that falls in the p-th P-th of the
 * 16,384 slots, else {@code {topic#p.s}} with the smallest salt s that does: the partitions of a
 * topic then land on different masters of a cluster whose masters hold equal slot ranges (what
 * {@code redis-cli --cluster create} makes), instead of wherever CRC16 throws them. With one
 * partition the tag is always {@code {topic#0}}. Stores written before this rule (by a release
 * that used {@code {topic#p}} for every p) keep their tags: {@link #partitionsValue()} records
 * which rule a store uses, and {@link #useLayout} is told what the store said.
 */
@ApplicationScoped
public class Keys {
    private static final int SLOTS = 16_384;
    private static final String SPREAD = " spread";
    private final String prefix;
    private final int count;
    private final Map<Partition, String> tags = new ConcurrentHashMap<>();
    /** The topics whose tags are cached: this replica's own (any other topic name may come in a request). */
    private final OwnTopics cached;
    private volatile boolean spread = true;
    private volatile boolean layoutKnown;

    /** Keys that cache the tags of every topic (tests build them by hand). */
    public Keys(DelayqConfig config) {
        this(config, topic -> true);
    }

    @Inject
    public Keys(DelayqConfig config, OwnTopics cached) {
        this.prefix = config.prefix();
        this.count = config.partitions();
        this.cached = cached;
    }

    private String base(Partition p) {
        // Cached only once the store's rule is known: a tag computed before could be of the wrong rule.
        return prefix + ":{" + (layoutKnown && cached.contains(p.topic()) ? tags.computeIfAbsent(p, this::tag) : tag(p)) + "}:";
    }

    private String tag(Partition p) {
        String plain = p.topic() + "#" + p.index();
        if (!spread || count == 1) {
            return plain;
        }
        int from = p.index() * SLOTS / count, to = (p.index() + 1) * SLOTS / count;
        String tag = plain;
        for (int salt = 1; !inRange(slot(tag), from, to); salt++) {
            tag = plain + "." + salt;
        }
        return tag;
    }

    private static boolean inRange(int slot, int from, int to) {
        return slot >= from && slot < to;
    }

    /** The Redis Cluster slot of a hash tag: CRC16 (XMODEM) mod 16,384. */
    public static int slot(String tag) {
        int crc = 0;
        for (byte b : tag.getBytes(StandardCharsets.UTF_8)) {
            crc ^= (b & 0xff) << 8;
            for (int i = 0; i < 8; i++) {
                crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
            }
        }
        return (crc & 0xffff) % SLOTS;
    }

    /**
     * What the store's {@link #partitions()} key says of it: the partition count, followed by
     * " spread" when its tags follow the spread rule. A new store is written with
     * {@link #partitionsValue()}.
     */
    void useLayout(String stored) {
        spread = stored.endsWith(SPREAD) || countOf(stored) == 1;
        tags.clear();
        layoutKnown = true;
    }

    /** Whether {@link #useLayout} was told the store's layout. */
    boolean layoutKnown() {
        return layoutKnown;
    }

    /** The value of {@link #partitions()} for a new store. */
    String partitionsValue() {
        return count + (count > 1 ? SPREAD : "");
    }

    /** The partition count a value of {@link #partitions()} records. */
    static int countOf(String stored) {
        return Integer.parseInt(stored.endsWith(SPREAD) ? stored.substring(0, stored.length() - SPREAD.length()) : stored);
    }

    /**
     * STRING: the number of partitions per topic the store was written with ({@code delayq.partitions}),
     * and with more than one, " spread" if the tags follow the spread rule.
     */
    public String partitions() {
        return prefix + ":partitions";
    }

    /** STRING: a lower bound of the lease deadlines in a partition's inflight set (absent: none). */
    public String leaseNext(Partition p) {
        return base(p) + "leasenext";
    }

    /**
     * STRING (expiring after a minute): the replica that reads Redis' memory this minute, for
     * {@code delayq_redis_memory_used_ratio} (SET NX PX: one reader per minute over all replicas).
     */
    public String memoryRead() {
        return prefix + ":memory-read";
    }

    /**
     * STRING (expiring after a minute): on a Redis Cluster, the replica that reads one master's
     * memory this minute ({@link #memoryRead()} per master): the first of {@code <prefix>:memory-read:{m<n>}}
     * (n = 1, 2, ...) whose slot {@code onMaster} accepts (that master serves it), the same for
     * every replica that reads the same slot map.
     */
    public String memoryRead(java.util.function.IntPredicate onMaster) {
        for (int n = 1; n <= 100_000; n++) {
            if (onMaster.test(slot("m" + n))) {
                return prefix + ":memory-read:{m" + n + "}";
            }
        }
        throw new IllegalArgumentException("no slot of this master found");
    }

    /**
     * SET of the known topics: every topic that had a job enqueued (or was paused, or given a rate
     * limit) and was not forgotten since ({@code DELETE /topics/{t}}, {@code delayq.topics-retention}).
     */
    public String topics() {
        return prefix + ":topics";
    }

    /**
     * HASH topic → Redis time (ms) it was last seen in use: served by a live replica (written with
     * the replica's entry, see io.delayq.ops.ReplicaRegistry) or holding jobs (written when
     * io.delayq.ops.TopicRetention looks at it). What a topic's retention is counted from.
     */
    public String topicsActive() {
        return prefix + ":topics:active";
    }

    /**
     * STRING, set for a while in each partition of a topic being forgotten: the first enqueue into
     * the partition after it takes it and lists the topic again (see forget.lua).
     */
    public String forgotten(Partition p) {
        return base(p) + "forgotten";
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

    /**
     * ZSET job id → time it succeeded ms, for a topic with a dedup window
     * ({@code delayq.topics.<t>.dedup-window}): the ids an enqueue answers as succeeded. Expires a
     * window after its last write.
     */
    public String done(Partition p) {
        return base(p) + "done";
    }

    /**
     * ZSET job id → time it succeeded ms, of the succeeded jobs a topic with
     * {@code delayq.topics.<t>.result-retention} keeps (bounded by {@code delayq.results.max-jobs}).
     * Written by the ack in the step that moves the job out of flight; expires a retention after
     * its last write.
     */
    public String succeeded(Partition p) {
        return base(p) + "succeeded";
    }

    /**
     * HASH job id → {@code <finishedAt ms>,<flag>\n<result JSON>\n<record as it succeeded>}: the
     * entries of {@link #succeeded} (see lib.lua's keep_results). Expires with it.
     */
    public String results(Partition p) {
        return base(p) + "results";
    }

    /**
     * ZSET outbox row token → time it was relayed ms: the rows of a transactional outbox
     * (quarkus-delayq-outbox) enqueued into this partition in the last 24 h, so that a row relayed
     * again (its relay crashed between the Redis write and the row's DELETE) is not enqueued a
     * second time, even when its job has meanwhile run and been acked. Written by enqueue.lua in the
     * same call as the job; expires 24 h after its last write.
     */
    public String relayed(Partition p) {
        return base(p) + "relayed";
    }

    /**
     * STRING: the topic's group rate limit set by an operator, jobs per second per group (a copy in
     * every partition, for the take script); absent = the replicas' configuration
     * ({@code delayq.topics.<t>.group-rate-limit}).
     */
    public String groupRateLimit(Partition p) {
        return base(p) + "grouprate";
    }

    /**
     * ZSET: the state of the group rate limit of the partition's groups: group → its GCRA
     * theoretical arrival time (ms, with a fraction), and {@code "\0<job id>"} → the turn a job put
     * off by the limit was given. The take drops entries a minute past their time; the key expires
     * a minute after its latest.
     */
    public String groupRateTat(Partition p) {
        return base(p) + "grouptat";
    }

    /**
     * HASH job id → {@code <partition>:<ms>:<group>}: the ids whose home partition this is (see
     * {@link StorePart#partitionOf(String, String)}) that live, as jobs of a group, in another
     * partition of the topic. The id's home is where every enqueue of the id meets, whatever its
     * group: claim.lua writes the claim before a group's partition takes the job, the enqueue
     * scripts of the home read it (see {@link IdClaims}). ms is Redis time while the claim's own
     * enqueue is pending, negated once it is done. Used only with several partitions; stale claims are
     * removed by the next enqueue of the id and by the dead sweep.
     */
    public String claims(Partition p) {
        return base(p) + "claims";
    }

    /**
     * HASH recurring schedule name → the last tick (epoch ms) it fired, or skipped, into this
     * partition: a tick at or before it is never enqueued again, so each tick runs once.
     */
    public String ticks(Partition p) {
        return base(p) + "ticks";
    }

    /**
     * ZSET dead-job callback ({@code <diedAt ms>:<job id>}) → when it is next due, ms: written in
     * the script step that buries the job, claimed and settled by the replicas with the topic's
     * {@code dead-url}.
     */
    public String callbacks(Partition p) {
        return base(p) + "callbacks";
    }

    /**
     * HASH dead-job callback → {@code <tries>,<diedAt ms>,<last callback error>\n<job record as it died>},
     * for pending and failed callbacks.
     */
    public String callbackData(Partition p) {
        return base(p) + "cbdata";
    }

    /**
     * STRING when the partition's first pending dead-job callback is due, ms (the lowest score in
     * {@link #callbacks}); absent when none is pending. Kept by the scripts that change callbacks,
     * so that the replicas' poll reads every partition with one MGET.
     */
    public String callbackNext(Partition p) {
        return base(p) + "cbnext";
    }

    /** ZSET dead-job callback that failed for good → time it gave up, ms (shown on the dashboard). */
    public String callbacksFailed(Partition p) {
        return base(p) + "cbfailed";
    }

    /** HASH replica id → what it serves and its recent rates (JSON), refreshed every few seconds. */
    public String replicas() {
        return prefix + ":replicas";
    }

    /**
     * STRING: the Redis time (ms) the partition's topic was paused at; absent while its jobs are
     * taken. Pause and resume write it in every partition of the topic; the take script and the
     * safety-net poll read it.
     */
    public String paused(Partition p) {
        return base(p) + "paused";
    }

    /**
     * STRING: the topic's rate limit set by an operator, jobs per second over all its partitions
     * (a copy in every partition, for the take script); absent = the replicas' configuration.
     */
    public String rateLimit(Partition p) {
        return base(p) + "ratelimit";
    }

    /**
     * STRING: the state of the partition's rate limit, GCRA's theoretical arrival time (Redis ms,
     * with a fraction); expires once it has passed.
     */
    public String rateTat(Partition p) {
        return base(p) + "ratetat";
    }

    /**
     * STRING: the Redis time (ms) until which the partition's topic is held because its HTTP target
     * answered 429 or 503 with {@code Retry-After}; expires at that time. Written to every partition
     * of the topic; the take script and the safety-net poll read it.
     */
    public String held(Partition p) {
        return base(p) + "held";
    }

    /**
     * STRING: the topic's concurrency cap set by an operator, the most jobs in flight at once over
     * all its partitions (a copy in every partition, for the take script); absent = the replicas'
     * configuration ({@code delayq.topics.<t>.max-in-flight}).
     */
    public String maxInFlight(Partition p) {
        return base(p) + "maxinflight";
    }

    /**
     * STRING, set (expiring) by a take that the concurrency cap held back while jobs were due; the
     * next script that frees a slot of the partition deletes it and publishes a wake-up. The
     * safety-net poll reads it: a marked partition has no slot to give, its takers stay asleep.
     */
    public String capped(Partition p) {
        return base(p) + "capped";
    }

    /**
     * HASH group → how many of its jobs are admitted (in flight, or released to run next); field
     * {@code ''} = the topic's {@code group-max-in-flight} as the last take saw it (see lib.lua).
     */
    public String groups(Partition p) {
        return base(p) + "groups";
    }

    /**
     * ZSET (scores 0) of the jobs a take held back because their group was at its limit, member
     * {@code <group>\0<runAt, 13 digits>\0<id>}: a group's held jobs are one lexical range.
     */
    public String groupsHeld(Partition p) {
        return base(p) + "gheld";
    }

    /** HASH job id → group of every admitted job (what the counts of {@link #groups} stand for). */
    public String groupsAdmitted(Partition p) {
        return base(p) + "gadmit";
    }

    /** HASH schedule name → definition (JSON) of the schedules created over REST. */
    public String schedules() {
        return prefix + ":schedules";
    }

    /**
     * STRING: a counter raised by every change of {@link #schedules()}; read by the safety-net
     * poll's MGET, so that replicas re-read the schedules when it moves rather than every few seconds.
     */
    public String schedulesRevision() {
        return prefix + ":schedules:rev";
    }

    /**
     * ZSET of the non-empty lane shards (priorities 1, 2, 4, 5), member and score their code
     * {@code lane * 100000000 + yyyymmdd} ({@link #laneCode}); apart from {@link #days} so that a
     * release before priorities never meets one.
     */
    public String laneDays(Partition p) {
        return base(p) + "ldays";
    }

    /** STRING: a lower bound of every runAt in the partition's lane shards (absent = none). */
    public String laneNext(Partition p) {
        return base(p) + "lnext";
    }

    /** What separates a lane's shard codes: {@code lane * LANE + yyyymmdd}. */
    public static final int LANE = 100_000_000;

    /** The shard code of a priority's day: the day itself for priority 3, else lane * {@link #LANE} + day. */
    public static int laneCode(int priority, int day) {
        return priority == 3 ? day : priority * LANE + day;
    }

    /**
     * ZSET job id → runAt ms, for the jobs due on one UTC day ({@code yyyymmdd}), or for one lane's
     * jobs of a day when given a lane code ({@link #laneCode}: its own key, {@code due:<code>}).
     */
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

    /**
     * HASH of one topic's history for one hour ({@code hour}: epoch ms / 3,600,000): minute of the
     * hour (0–59) → {@code e:<enqueued>,s:<succeeded>,f:<failed>,<bin>:<attempts>,...} (see
     * history.lua). Tagged by the topic alone: a reader of 24 hours asks one slot. Expires 25 hours
     * after its hour ended.
     */
    public String history(String topic, long hour) {
        return prefix + ":hist:{" + topic + "}:" + hour;
    }

    /**
     * ZSET beside a history key ({@link #history}, {@link #historyTotal}; same slot): the flush ids
     * applied to it lately, scored by when (history.lua applies an id once).
     */
    public String historyFlushes(String historyKey) {
        return historyKey + ":flushes";
    }

    /** As {@link #history} for the sum of every topic ({@code ~} is in no topic name). */
    public String historyTotal(long hour) {
        return prefix + ":hist:{~all}:" + hour;
    }
}
