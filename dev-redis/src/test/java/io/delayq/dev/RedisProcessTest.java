package io.delayq.dev;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

/** The local Redis of dev mode and the tests, on a machine with and without redis-server on PATH. */
class RedisProcessTest {

    @Test
    void embeddedBinaryServesWhenNoRedisServerIsInstalled() {
        RedisProcess redis = RedisProcess.start(RedisProcess.embeddedExecutable(), RedisProcess.freePort(),
                List.of("--save", "", "--appendonly", "no"));
        try {
            assertTrue(redis.ping(), "the embedded redis-server answers PING");
        } finally {
            redis.stop();
        }
        assertFalse(redis.ping(), "stopped");
    }
}
