package io.delayq.ops;

import jakarta.enterprise.context.ApplicationScoped;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

import io.delayq.core.DelayqConfig;
import io.delayq.dispatch.Dispatcher;

/**
 * Liveness DOWN only when a taker loop is stuck: no progress for several safety-net intervals
 * (beyond the longest a Redis call may block) while it should be running, or its thread died.
 * Redis being away is not a liveness failure — restarting the pod would not bring Redis back.
 */
@Liveness
@ApplicationScoped
public class TakerLiveness implements HealthCheck {
    private final Dispatcher dispatcher;
    private final long limitNanos;

    public TakerLiveness(Dispatcher dispatcher, DelayqConfig config) {
        this.dispatcher = dispatcher;
        this.limitNanos = Math.max(5 * config.dispatch().safetyNet().toNanos(),
                2 * config.redisTimeout().toNanos() + config.dispatch().safetyNet().toNanos());
    }

    @Override
    public HealthCheckResponse call() {
        long stall = dispatcher.longestStallNanos();
        boolean up = stall <= limitNanos;
        return HealthCheckResponse.named("delayq-takers").status(up)
                .withData("takers", dispatcher.partitions().size())
                .withData("longestStallMs", stall == Long.MAX_VALUE ? -1 : stall / 1_000_000)
                .withData("limitMs", limitNanos / 1_000_000)
                .withData("state", up ? "taking" : stall == Long.MAX_VALUE ? "a taker thread died" : "a taker is stuck")
                .build();
    }
}
