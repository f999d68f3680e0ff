package io.delayq.store;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * What the parts of the store share, one per replica: the gateway, the scripts and the keys, the
 * partition count, what the configuration says per topic (dedup window, rate limit, dead-job
 * callback), the check of the store's layout, the topics this replica listed, and who is told
 * when a burial recorded a dead-job callback. Each part ({@link JobQueue}, {@link Inspection},
 * {@link TopicAdmin}, {@link ScheduleStore}, {@link ReplicaStore}, {@link DeadCallbackStore})
 * stands on it through {@link StorePart}.
 */
@ApplicationScoped
public class StoreLayer {
    private static final Logger LOG = Logger.getLogger(StoreLayer.class);
    private final RedisGateway redis;
    private final Scripts scripts;
    private final Keys keys;
    private final int partitions;
    private final boolean cluster;
    private final java.util.concurrent.atomic.AtomicBoolean layoutCheck = new java.util.concurrent.atomic.AtomicBoolean();
    private final int durableReplicas;
    private final long durableWaitMs;
    /** Dedup window ms of the topics that set one ({@code delayq.topics.<t>.dedup-window}). */
    private final Map<String, Long> dedupWindows = new HashMap<>();
    /** Rate limit in jobs/s of the topics that configure one ({@code delayq.topics.<t>.rate-limit}). */
    private final Map<String, Double> rateLimits = new HashMap<>();
    /** Concurrency cap of the topics that configure one ({@code delayq.topics.<t>.max-in-flight}). */
    private final Map<String, Integer> maxInFlights = new HashMap<>();
    private final Map<String, Integer> groupMaxInFlights = new HashMap<>();
    private final Map<String, Double> groupRateLimits = new HashMap<>();
    /** Topics with {@code delayq.topics.<t>.dead-url}: their burials record a dead-job callback. */
    private final Set<String> callbackTopics = new java.util.HashSet<>();
    /** Dead-set bounds: {@code delayq.dead.*}, and the topics that override them. */
    private final int deadMaxJobs;
    private final long deadMaxAgeMs;
    private final Map<String, Integer> deadMaxJobsOf = new HashMap<>();
    private final Map<String, Long> deadMaxAgeOf = new HashMap<>();
    /** Told of the dead jobs a script trimmed from a topic's dead set (counted and logged). */
    private volatile java.util.function.BiConsumer<String, java.util.List<String>> onTrimmed = (t, ids) -> {
    };
    /** Told of jobs of a topic that went to dead because their expiresAt passed (counted). */
    private volatile java.util.function.ObjIntConsumer<String> onExpired = (t, n) -> {
    };
    /** Told of a partition where a burial just recorded a callback (the sender sends it at once). */
    private volatile Consumer<Partition> onCallback = p -> {
    };
    /** The topics this replica listed, and when (see {@link TopicListing}). */
    private final TopicListing listing;
    /** What this replica counted for the history, not yet flushed (see {@link HistoryStore}). */
    private final HistoryCounts history;
    /** Which topics keep their succeeded jobs, and the results of acks not yet in Redis. */
    private final ResultRetention results;

    /** A layer that remembers every topic it listed (tests build one by hand). */
    public StoreLayer(RedisGateway redis, Scripts scripts, Keys keys, DelayqConfig config) {
        this(redis, scripts, keys, config, topic -> true);
    }

    @Inject
    public StoreLayer(RedisGateway redis, Scripts scripts, Keys keys, DelayqConfig config, OwnTopics remembered) {
        this.listing = new TopicListing(redis, keys, remembered);
        this.history = new HistoryCounts(remembered);
        this.redis = redis;
        this.scripts = scripts;
        this.keys = keys;
        this.partitions = config.partitions();
        this.durableReplicas = config.durability().replicas();
        this.durableWaitMs = config.durability().timeout().toMillis();
        this.cluster = redis.cluster();
        this.results = new ResultRetention(config, partitions, redis);
        config.topics().forEach((topic, t) -> t.dedupWindow().filter(w -> w.toMillis() > 0)
                .ifPresent(w -> dedupWindows.put(topic, w.toMillis())));
        config.topics().forEach((topic, t) -> t.deadUrl().ifPresent(u -> callbackTopics.add(topic)));
        this.deadMaxJobs = deadMaxJobs("delayq.dead.max-jobs", config.dead().maxJobs());
        this.deadMaxAgeMs = deadMaxAge("delayq.dead.max-age", config.dead().maxAge());
        config.topics().forEach((topic, t) -> {
            t.deadMaxJobs().ifPresent(n -> deadMaxJobsOf.put(topic, deadMaxJobs("delayq.topics." + topic + ".dead.max-jobs", n)));
            t.deadMaxAge().ifPresent(a -> deadMaxAgeOf.put(topic, deadMaxAge("delayq.topics." + topic + ".dead.max-age", a)));
        });
        config.topics().forEach((topic, t) -> t.rateLimit().ifPresent(r -> {
            if (!(r >= 0.001) || r > 1_000_000) {
                throw new IllegalStateException("delayq.topics." + topic + ".rate-limit must be a number of jobs per"
                        + " second from 0.001 to 1000000, not " + r + " (to stop a topic, pause it: POST /topics/" + topic
                        + "/pause)");
            }
            rateLimits.put(topic, r);
        }));
        config.topics().forEach((topic, t) -> t.maxInFlight().ifPresent(n -> {
            String broken = io.delayq.core.TopicControl.brokenMaxInFlight(n, partitions);
            if (broken != null) {
                throw new IllegalStateException("delayq.topics." + topic + ".max-in-flight " + broken);
            }
            maxInFlights.put(topic, n);
        }));
        config.topics().forEach((topic, t) -> t.groupMaxInFlight().ifPresent(n -> {
            if (n < 1) {
                throw new IllegalStateException("delayq.topics." + topic + ".group-max-in-flight must be at least 1, not "
                        + n + " (leave it unset for no limit per group)");
            }
            groupMaxInFlights.put(topic, n);
        }));
        config.topics().forEach((topic, t) -> t.groupRateLimit().ifPresent(r -> {
            if (!(r >= io.delayq.core.TopicControl.MIN_RATE) || r > io.delayq.core.TopicControl.MAX_RATE) {
                throw new IllegalStateException("delayq.topics." + topic + ".group-rate-limit must be a number of jobs"
                        + " per second from 0.001 to 1000000, not " + r + " (leave it unset for no limit per group)");
            }
            groupRateLimits.put(topic, r);
        }));
    }

    RedisGateway redis() {
        return redis;
    }

    Scripts scripts() {
        return scripts;
    }

    Keys keys() {
        return keys;
    }

    int partitions() {
        return partitions;
    }

    boolean cluster() {
        return cluster;
    }

    int durableReplicas() {
        return durableReplicas;
    }

    long durableWaitMs() {
        return durableWaitMs;
    }

    /** Dedup window ms of the topics that set one. */
    Map<String, Long> dedupWindows() {
        return dedupWindows;
    }

    /** Rate limit in jobs/s of the topics that configure one. */
    Map<String, Double> rateLimits() {
        return rateLimits;
    }

    /** Concurrency cap of the topics that configure one. */
    Map<String, Integer> maxInFlights() {
        return maxInFlights;
    }

    /** Group limit (group-max-in-flight) of the topics that configure one. */
    Map<String, Integer> groupMaxInFlights() {
        return groupMaxInFlights;
    }

    /** Rate limit per group in jobs/s of the topics that configure one. */
    Map<String, Double> groupRateLimits() {
        return groupRateLimits;
    }

    ResultRetention results() {
        return results;
    }

    TopicListing listing() {
        return listing;
    }

    HistoryCounts history() {
        return history;
    }

    /**
     * Every call that builds keys first learns the store's layout (once): when Redis was away at
     * start-up the check runs at the first call that reaches it; a store written with another
     * partition count then fails every call, loudly, rather than write to keys nobody reads.
     */
    void ensureLayout() {
        redis.await(ensureLayoutAsync());
    }

    Future<Void> ensureLayoutAsync() {
        if (keys.layoutKnown()) {
            return Future.succeededFuture();
        }
        // One caller checks; the others fail fast (as if Redis were away) rather than queue
        // behind a check that waits for a Redis that does not answer.
        if (!layoutCheck.compareAndSet(false, true)) {
            return Future.failedFuture(new StoreUnavailableException("checking the store's layout (" + keys.partitions() + ")",
                    null, true));
        }
        if (keys.layoutKnown()) {
            layoutCheck.set(false);
            return Future.succeededFuture();
        }
        return checkPartitionsAsync(partitions).<Void>mapEmpty().onComplete(done -> {
            layoutCheck.set(false);
            if (done.failed() && done.cause() instanceof IllegalStateException e) {
                LOG.error(e.getMessage());
            }
        });
    }

    /**
     * Records the partition count on first use of the store and fails when it differs from the
     * one the store was written with: jobs of partitions that a smaller count drops would never
     * be taken, and a larger count would look for some ids in the wrong partition. Returns the
     * count found (the given one on a new store).
     */
    public int checkPartitions(int partitions) {
        return redis.await(checkPartitionsAsync(partitions));
    }

    private Future<Integer> checkPartitionsAsync(int partitions) {
        return (cluster ? requireRedis7().compose(v -> warnOnFullCoverage()) : Future.<Void>succeededFuture())
                .compose(v -> redis.sendAsync(Request.cmd(Command.GET).arg(keys.partitions())))
                .compose(marker -> marker != null ? Future.succeededFuture(marker)
                        // A store without the marker but with topics was written by a release from before it
                        // (plain tags, whatever the count): mark it so, or its jobs would be looked for elsewhere.
                        : redis.sendAsync(Request.cmd(Command.EXISTS).arg(keys.topics()))
                                .compose(older -> redis.sendAsync(Request.cmd(Command.SET).arg(keys.partitions())
                                        .arg(older.toInteger() == 1 ? Integer.toString(partitions) : keys.partitionsValue())
                                        .arg("NX")))
                                // another replica's, if it was first
                                .compose(set -> redis.sendAsync(Request.cmd(Command.GET).arg(keys.partitions()))))
                .compose(marker -> {
                    String value = marker.toString();
                    int stored = Keys.countOf(value);
                    if (stored != partitions) {
                        return Future.failedFuture(new IllegalStateException("delayq.partitions is " + partitions
                                + " but the store (" + keys.partitions() + ") was written with " + stored
                                + ": jobs would be stranded. Keep " + stored + ", or move to " + partitions
                                + " under a new delayq.prefix while replicas with the old prefix drain the old jobs "
                                + "(see docs/concepts.md, \"Changing delayq.partitions\")"));
                    }
                    keys.useLayout(value);
                    return Future.succeededFuture(stored);
                });
    }

    /** Sharded pub/sub (the wake-ups on a cluster) needs Redis 7: refuse to start on an older cluster. */
    private Future<Void> requireRedis7() {
        return redis.sendAsync(Request.cmd(Command.INFO).arg("server")).compose(reply -> {
            for (String line : reply.toString().split("\\r?\\n")) {
                if (line.startsWith("redis_version:")) {
                    String version = line.substring("redis_version:".length()).trim();
                    if (Integer.parseInt(version.substring(0, version.indexOf('.'))) < 7) {
                        return Future.failedFuture(new IllegalStateException("delayq on a Redis Cluster needs Redis 7"
                                + " or later (sharded pub/sub); this cluster runs " + version));
                    }
                }
            }
            return Future.succeededFuture();
        });
    }

    /**
     * With {@code cluster-require-full-coverage yes} (Redis' default) a master that fails makes
     * every other master refuse every command (CLUSTERDOWN) until its replica is promoted: each
     * partition of every topic pauses for the election (0.5–1.5 s after the node timeout), and for
     * good if the master has no replica. Said once at start-up; a Redis that does not allow CONFIG
     * (a managed service, an ACL) is not asked again.
     */
    private Future<Void> warnOnFullCoverage() {
        String name = "cluster-require-full-coverage";
        return redis.sendAsync(Request.cmd(Command.CONFIG).arg("GET").arg(name)).map(reply -> {
            Response value = reply == null ? null : reply.isMap() ? reply.get(name) : reply.size() >= 2 ? reply.get(1) : null;
            if (value != null && "yes".equalsIgnoreCase(value.toString())) {
                LOG.warnf("this Redis Cluster has %s yes: while any one master fails over, every master refuses every "
                        + "command, so all partitions pause, not only the failed master's. Set it to no on every node "
                        + "(CONFIG SET %s no, and in redis.conf) so that one master's failure slows its own partitions "
                        + "only (see docs/redis.md)", name, name);
            }
            return (Void) null;
        }).otherwise(e -> {
            LOG.debugf("%s could not be read (%s): not checked", name, e.toString());
            return null;
        });
    }

    private static int deadMaxJobs(String name, int n) {
        if (n < 0) {
            throw new IllegalStateException(name + " must be 0 (no bound) or more, not " + n);
        }
        return n;
    }

    private static long deadMaxAge(String name, java.time.Duration age) {
        if (age.isNegative()) {
            throw new IllegalStateException(name + " must be 0 (no bound) or more, not " + age);
        }
        return age.toMillis();
    }

    /**
     * The dead jobs (and failed dead-job callbacks) one partition of the topic keeps: its share of
     * {@code delayq.dead.max-jobs}, rounded up; 0 = no bound.
     */
    int deadKeep(String topic) {
        int max = deadMaxJobsOf.getOrDefault(topic, deadMaxJobs);
        return max == 0 ? 0 : (max + partitions - 1) / partitions;
    }

    /** How long the topic keeps a dead job, ms ({@code delayq.dead.max-age}); 0 = no bound. */
    long deadMaxAgeMs(String topic) {
        return deadMaxAgeOf.getOrDefault(topic, deadMaxAgeMs);
    }

    /**
     * What a script that may bury a job of the partition is told of the burial (lib.lua's bury):
     * "{@code <callback 1|0>,<dead jobs kept>,<max age ms>}"; no callback while Redis is full.
     */
    String burial(Partition p) {
        // While Redis is full, the burial (allow-oom) still moves the job to dead, but adds no
        // callback: what only adds is skipped then (the gateway's WARN says so).
        boolean callback = callbackTopics.contains(p.topic()) && !redis.isFull();
        return (callback ? "1," : "0,") + deadKeep(p.topic()) + "," + deadMaxAgeMs(p.topic());
    }

    /** Who to tell of the dead jobs a script trimmed (the retention's counter and log). */
    void onDeadTrimmed(java.util.function.BiConsumer<String, java.util.List<String>> listener) {
        this.onTrimmed = listener;
    }

    /** The ids at {@code from} onwards of a script's reply, trimmed from the partition's dead set. */
    void trimmed(Partition p, Response reply, int from) {
        if (reply.size() > from) {
            java.util.List<String> ids = new java.util.ArrayList<>(reply.size() - from);
            for (int i = from; i < reply.size(); i++) {
                ids.add(reply.get(i).toString());
            }
            onTrimmed.accept(p.topic(), ids);
        }
    }

    /** As above, with the ids already read. */
    void trimmed(Partition p, java.util.List<String> ids) {
        if (!ids.isEmpty()) {
            onTrimmed.accept(p.topic(), ids);
        }
    }

    /** Who to tell of the jobs that went to dead because their expiresAt passed. */
    void onExpired(java.util.function.ObjIntConsumer<String> listener) {
        this.onExpired = listener;
    }

    /** {@code n} jobs of the partition went to dead because their expiresAt passed. */
    void expired(Partition p, int n) {
        if (n > 0) {
            onExpired.accept(p.topic(), n);
        }
    }

    void calledBack(Partition p) {
        if (callbackTopics.contains(p.topic())) {
            onCallback.accept(p);
        }
    }

    /** Who to tell when a burial here recorded a dead-job callback (the callback sender). */
    void onCallbackRecorded(Consumer<Partition> listener) {
        this.onCallback = listener;
    }
}
