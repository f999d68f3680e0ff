package io.delayq.dev;

import static org.junit.jupiter.api.Assertions.assertEquals;
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

    /** What the Dev Service logs as the server it started: the binary's own name and version. */
    @Test
    void aServerIsDescribedByItsOwnVersionLine() {
        String embedded = RedisProcess.describe(RedisProcess.embeddedExecutable());
        assertTrue(embedded.matches("Redis server v=6\\.2\\.\\d+"), embedded);
        assertEquals("/no/such/redis-server", RedisProcess.describe("/no/such/redis-server"), "its path when it cannot say");
    }
}
