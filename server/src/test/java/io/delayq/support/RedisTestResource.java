package io.delayq.support;

import java.util.Map;

import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;

/**
 * Starts a real redis-server on a free port for the whole test run (one per JVM) and points
 * the application at it. Tests take it away and bring it back with {@link #redis()}.
 */
public class RedisTestResource implements QuarkusTestResourceLifecycleManager {
    private static RedisProcess redis;

    /** A connection to the tests' Redis, for assertions on its keys; the caller closes it. */
    public static Resp resp() {
        return new Resp(redis().port());
    }

    public static synchronized RedisProcess redis() {
        if (redis == null) {
            redis = RedisProcess.startEphemeral();
            Runtime.getRuntime().addShutdownHook(new Thread(redis::stop));
        }
        return redis;
    }

    @Override
    public Map<String, String> start() {
        return Map.of("quarkus.redis.hosts", redis().uri());
    }

    @Override
    public void stop() {
        // Kept for the next test class of this JVM (Quarkus restarts per test profile);
        // stopped by the shutdown hook.
    }
}
