package io.delayq.ops;

import jakarta.enterprise.context.ApplicationScoped;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

import io.delayq.dispatch.Dispatcher;

/**
 * Readiness DOWN while this replica drains. (Redis reachability has its own readiness check,
 * the Redis client's "Redis connection health check"; Quarkus' shutdown-delay check turns
 * readiness DOWN as soon as SIGTERM arrives.)
 */
@Readiness
@ApplicationScoped
public class DrainReadiness implements HealthCheck {
    private final Dispatcher dispatcher;

    public DrainReadiness(Dispatcher dispatcher) {
        this.dispatcher = dispatcher;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("delayq-dispatch")
                .status(!dispatcher.draining())
                .withData("replica", dispatcher.replicaId())
                .withData("state", dispatcher.draining() ? "draining: not taking jobs" : "taking")
                .withData("wakeUpSubscription", dispatcher.wakeUpsConnected() ? "connected" : "reconnecting")
                .build();
    }
}
