package io.delayq.ops;

import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.delayq.store.Keys;
import io.delayq.store.RedisGateway;
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
 * On a Redis Cluster the reading (one INFO per master) is not made: the gauge is absent there.
 */
@ApplicationScoped
public class RedisMemory {
    private static final Logger LOG = Logger.getLogger(RedisMemory.class);
    private static final long STALE_MS = 120_000;
    private final RedisGateway redis;
    private final Keys keys;
    private final MeterRegistry registry;
    private volatile double ratio = Double.NaN;
    private volatile long readAt;
    private volatile String policy;
    private volatile boolean warned;
    static final int WITHOUT_MAXMEMORY_EVERY = 10;
    /** Minutes since this replica's last claim while it knows of no maxmemory. */
    private int skipped;
    private volatile boolean noMaxmemory;
    private Gauge gauge;

    public RedisMemory(RedisGateway redis, Keys keys, MeterRegistry registry) {
        this.redis = redis;
        this.keys = keys;
        this.registry = registry;
    }

    void onStart(@Observes StartupEvent event) {
        redis.sendAsync(Request.cmd(Command.INFO).arg("memory")).onSuccess(r -> learn(r.toString(), false))
                .onFailure(e -> LOG.debugf("INFO memory not read at start (%s): maxmemory-policy not checked yet", e));
    }

    /** Once a minute: the reading, when this replica wins the minute's claim. */
    @Scheduled(every = "60s", delayed = "10s", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void everyMinute() {
        if (redis.cluster()) {
            return;
        }
        if (noMaxmemory && ++skipped < WITHOUT_MAXMEMORY_EVERY) {
            return;
        }
        skipped = 0;
        try {
            read();
        } catch (RuntimeException e) {
            LOG.debugf("Redis memory not read this minute: %s", e.toString());
        }
    }

    /** Claims this minute's reading and makes it; false when another replica has it (the test seam). */
    public boolean read() {
        Response claimed = redis.send(Request.cmd(Command.SET).arg(keys.memoryRead()).arg("1").arg("NX").arg("PX").arg(60_000));
        if (claimed == null) {
            return false;
        }
        learn(redis.send(Request.cmd(Command.INFO).arg("memory")).toString(), true);
        return true;
    }

    private void learn(String info, boolean measure) {
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
        noMaxmemory = max <= 0;
        if (!measure) {
            return;
        }
        long used = Long.parseLong(fields.getOrDefault("used_memory", "0"));
        if (max <= 0) {
            ratio = Double.NaN;
            synchronized (this) {
                if (gauge != null) {
                    registry.remove(gauge);
                    gauge = null;
                }
            }
            return;
        }
        ratio = (double) used / max;
        readAt = System.currentTimeMillis();
        if (ratio >= 1) {
            redis.full();
        }
        synchronized (this) {
            if (gauge == null) {
                gauge = Gauge.builder("delayq.redis.memory.used.ratio", this, RedisMemory::current)
                        .description("Redis used_memory / maxmemory, read once a minute by one replica (absent without a"
                                + " maxmemory); at 1 Redis is full: enqueues are refused")
                        .register(registry);
            }
        }
    }

    /** The last reading, NaN when none is recent. */
    double current() {
        return System.currentTimeMillis() - readAt > STALE_MS ? Double.NaN : ratio;
    }

    /** Why Redis' eviction policy endangers jobs, when it does (the readiness check's data). */
    public Optional<String> policyWarning() {
        String p = policy;
        return p == null || p.equals("noeviction") ? Optional.empty()
                : Optional.of(p + ": a full Redis deletes keys, jobs among them; set noeviction");
    }
}
