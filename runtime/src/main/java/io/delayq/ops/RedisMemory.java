package io.delayq.ops;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.delayq.store.Keys;
import io.delayq.store.RedisGateway;
import io.delayq.store.RedisNodes;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.scheduler.Scheduled;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * How full Redis is: {@code delayq_redis_memory_used_ratio} (used_memory / maxmemory, from
 * {@code INFO memory}), read once a minute by one replica over all of them (the one whose
 * {@code SET NX PX 60000} of {@link Keys#memoryRead} wins: the others pay one command a minute),
 * so that the idle budget holds; absent without a maxmemory, and on a replica that did not read
 * it within two minutes. While this replica's last reading found no maxmemory (Redis' default),
 * it claims only every {@value #WITHOUT_MAXMEMORY_EVERY}th minute: a maxmemory set later is seen
 * within that many minutes, and an idle replica does not pay a claim a minute for nothing. A reading of 1 or more counts as Redis being full
 * ({@link RedisGateway#full}). At start, and with every reading, the {@code maxmemory_policy}:
 * anything but {@code noeviction} lets Redis delete keys, jobs among them, when it fills up: said
 * at WARN once and in the readiness check's data ({@link #policyWarning}).
 * On a Redis Cluster each master is read apart ({@link #readMasters}): one claim per master
 * ({@link Keys#memoryRead(java.util.function.IntPredicate)}, a key that master serves), so that
 * one replica a minute reads each master's INFO over a connection to it, and a gauge per master
 * tagged {@code node} (its host:port); a master at 1 or more counts as Redis being full.
 */
@ApplicationScoped
public class RedisMemory {
    private static final Logger LOG = Logger.getLogger(RedisMemory.class);
    private static final long STALE_MS = 120_000;
    private final RedisGateway redis;
    private final Keys keys;
    private final MeterRegistry registry;
    private final RedisNodes nodes;
    /** The readings by node: "" for a single Redis (the gauge without a tag), host:port for a master. */
    private final Map<String, Reading> readings = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile String policy;
    private volatile boolean warned;
    static final int WITHOUT_MAXMEMORY_EVERY = 10;
    /** Minutes since this replica's last claim while it knows of no maxmemory (a single Redis). */
    private int skipped;
    private volatile boolean noMaxmemory;

    /** One node's last reading, and its gauge while it has a maxmemory. */
    private static final class Reading {
        volatile double ratio = Double.NaN;
        volatile long readAt;
        Gauge gauge;

        /** The last reading, NaN when none is recent. */
        double current() {
            return System.currentTimeMillis() - readAt > STALE_MS ? Double.NaN : ratio;
        }
    }

    public RedisMemory(RedisGateway redis, Keys keys, MeterRegistry registry, RedisNodes nodes) {
        this.redis = redis;
        this.keys = keys;
        this.registry = registry;
        this.nodes = nodes;
    }

    void onStart(@Observes StartupEvent event) {
        redis.sendAsync(Request.cmd(Command.INFO).arg("memory")).onSuccess(r -> learn(r.toString(), null))
                .onFailure(e -> LOG.debugf("INFO memory not read at start (%s): maxmemory-policy not checked yet", e));
    }

    /** Once a minute: the reading, when this replica wins the minute's claim. */
    @Scheduled(every = "60s", delayed = "10s", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void everyMinute() {
        if (!redis.cluster()) {
            if (noMaxmemory && ++skipped < WITHOUT_MAXMEMORY_EVERY) {
                return;
            }
            skipped = 0;
        }
        try {
            if (redis.cluster()) {
                readMasters();
            } else {
                read();
            }
        } catch (RuntimeException e) {
            LOG.debugf("Redis memory not read this minute: %s", e.toString());
        }
    }

    /** Claims this minute's reading and makes it; false when another replica has it (the test seam). */
    public boolean read() {
        if (!claim(keys.memoryRead())) {
            return false;
        }
        learn(redis.send(Request.cmd(Command.INFO).arg("memory")).toString(), "");
        return true;
    }

    /**
     * On a Redis Cluster: claims this minute's reading of each master and makes those it won (INFO
     * memory over a connection to that master); returns the masters read (host:port), the test seam.
     */
    public List<String> readMasters() {
        long timeoutMs = 5_000;
        String[] map = nodes.masters(timeoutMs).toCompletionStage().toCompletableFuture().orTimeout(timeoutMs + 1000,
                java.util.concurrent.TimeUnit.MILLISECONDS).join();
        List<String> read = new java.util.ArrayList<>();
        for (String master : new java.util.LinkedHashSet<>(java.util.Arrays.asList(map))) {
            if (master == null) {
                continue;
            }
            try {
                String claim = keys.memoryRead(slot -> master.equals(map[slot]));
                if (!claim(claim)) {
                    continue;
                }
                String info = nodes.sendTo(master, Request.cmd(Command.INFO).arg("memory"), timeoutMs).toCompletionStage()
                        .toCompletableFuture().orTimeout(timeoutMs + 1000, java.util.concurrent.TimeUnit.MILLISECONDS).join()
                        .toString();
                String node = hostPort(master);
                learn(info, node);
                read.add(node);
            } catch (RuntimeException e) {
                // One master that does not answer leaves the others' readings alone.
                LOG.debugf("Redis memory of %s not read this minute: %s", hostPort(master), e.toString());
            }
        }
        return read;
    }

    /**
     * This minute's claim of a reading: true when won, and when Redis refuses the claim because it is
     * full (noeviction refuses every write, the {@code SET NX} too): a full Redis is what the gauge is
     * for, so then every replica reads (one INFO a minute each, only while full).
     */
    private boolean claim(String key) {
        try {
            return redis.send(Request.cmd(Command.SET).arg(key).arg("1").arg("NX").arg("PX").arg(60_000)) != null;
        } catch (io.delayq.store.RedisFullException e) {
            return true;
        }
    }

    /** An endpoint as a gauge's tag: host:port, never its credentials. */
    static String hostPort(String endpoint) {
        java.net.URI u = java.net.URI.create(endpoint);
        return u.getHost() + ":" + u.getPort();
    }

    /** Learns the policy; and the ratio of {@code node} ("" = the single Redis) when {@code node} is non-null. */
    private void learn(String info, String node) {
        Map<String, String> fields = new java.util.HashMap<>();
        for (String line : info.split("\r?\n")) {
            int c = line.indexOf(':');
            if (c > 0) {
                fields.put(line.substring(0, c), line.substring(c + 1).trim());
            }
        }
        String p = fields.get("maxmemory_policy");
        if (p != null) {
            policy = p;
            if (!p.equals("noeviction") && !warned) {
                warned = true;
                LOG.warnf("Redis' maxmemory-policy is %s, not noeviction: a Redis that fills up deletes keys, delayq's jobs"
                        + " among them. Set maxmemory-policy noeviction (a full Redis then refuses new jobs with 503 and"
                        + " runs the ones it holds: see docs/redis.md)", p);
            }
        }
        long max = Long.parseLong(fields.getOrDefault("maxmemory", "0"));
        if ((node == null || node.isEmpty()) && !redis.cluster()) {
            noMaxmemory = max <= 0;
        }
        if (node == null) {
            return;
        }
        Reading reading = readings.computeIfAbsent(node, n -> new Reading());
        long used = Long.parseLong(fields.getOrDefault("used_memory", "0"));
        if (max <= 0) {
            reading.ratio = Double.NaN;
            synchronized (this) {
                if (reading.gauge != null) {
                    registry.remove(reading.gauge);
                    reading.gauge = null;
                }
            }
            return;
        }
        reading.ratio = (double) used / max;
        reading.readAt = System.currentTimeMillis();
        if (reading.ratio >= 1) {
            redis.full();
        }
        synchronized (this) {
            if (reading.gauge == null) {
                Gauge.Builder<Reading> b = Gauge.builder("delayq.redis.memory.used.ratio", reading, Reading::current)
                        .description("Redis used_memory / maxmemory, read once a minute by one replica (absent without a"
                                + " maxmemory; on a Redis Cluster one per master, tag node); at 1 Redis is full:"
                                + " enqueues are refused");
                reading.gauge = (node.isEmpty() ? b : b.tag("node", node)).register(registry);
            }
        }
    }

    /** Why Redis' eviction policy endangers jobs, when it does (the readiness check's data). */
    public Optional<String> policyWarning() {
        String p = policy;
        return p == null || p.equals("noeviction") ? Optional.empty()
                : Optional.of(p + ": a full Redis deletes keys, jobs among them; set noeviction");
    }
}
