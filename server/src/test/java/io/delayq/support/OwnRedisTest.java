package io.delayq.support;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import io.delayq.dev.RedisProcess;

/**
 * Base of the multi-process tests: a redis-server of their own for the class, which the replica
 * processes they start connect to.
 */
public abstract class OwnRedisTest {
    protected static RedisProcess redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisProcess.startEphemeral();
    }

    @AfterAll
    static void stopRedis() {
        redis.stop();
    }
}
