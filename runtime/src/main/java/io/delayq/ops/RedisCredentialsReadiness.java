package io.delayq.ops;

import jakarta.enterprise.context.ApplicationScoped;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

import io.delayq.store.RedisGateway;

/**
 * Readiness DOWN while Redis refuses delayq's credentials (WRONGPASS, NOAUTH), with the reason:
 * the Redis client's own check only says that it cannot connect. Read from the replica's last
 * Redis calls (its loops make some every second), so the check itself sends nothing.
 */
@Readiness
@ApplicationScoped
public class RedisCredentialsReadiness implements HealthCheck {
    private final RedisGateway gateway;

    public RedisCredentialsReadiness(RedisGateway gateway) {
        this.gateway = gateway;
    }

    @Override
    public HealthCheckResponse call() {
        var refused = gateway.credentialsRefused();
        var r = HealthCheckResponse.named("delayq-redis-credentials").status(refused.isEmpty());
        refused.ifPresent(reason -> r.withData("reason", reason));
        return r.build();
    }
}
