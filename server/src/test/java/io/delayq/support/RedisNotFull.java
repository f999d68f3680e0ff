package io.delayq.support;

import java.time.Duration;

import org.awaitility.Awaitility;

import io.delayq.store.RedisGateway;

/**
 * For the tests that need a success kept with its result (or a dead-job callback) in the shared
 * application: a replica keeps no result while Redis was found full within the last 90 s
 * ({@link RedisGateway#isFull()}, as it should), and a test of the same application may have filled
 * Redis on purpose just before (UnavailableEnqueueTest, OpenApiExactnessTest's 503s). Waits until that
 * sign has lapsed, so that the test does not hang on the order its class runs in.
 */
public final class RedisNotFull {
    private RedisNotFull() {
    }

    public static void await(RedisGateway redis) {
        Awaitility.await("Redis no longer seen full (results are kept again)").atMost(Duration.ofSeconds(150))
                .pollInterval(Duration.ofMillis(200)).until(() -> !redis.isFull());
    }
}
