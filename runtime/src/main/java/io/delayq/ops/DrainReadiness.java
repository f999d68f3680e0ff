package io.delayq.ops;

import jakarta.enterprise.context.ApplicationScoped;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

import io.delayq.dispatch.Dispatcher;

/**
 * Readiness DOWN while this replica drains. Its data also says when Redis' maxmemory-policy is not
 * noeviction ({@link RedisMemory}). (Redis reachability has its own readiness check,
 * the Redis client's "Redis connection health check"; Quarkus' shutdown-delay check turns
 * readiness DOWN as soon as SIGTERM arrives.)
 */
@Readiness
@ApplicationScoped
public class DrainReadiness implements HealthCheck {
    private final Dispatcher dispatcher;
    private final RedisMemory memory;

    public DrainReadiness(Dispatcher dispatcher, RedisMemory memory) {
        this.dispatcher = dispatcher;
        this.memory = memory;
    }

    @Override
    public HealthCheckResponse call() {
        var response = HealthCheckResponse.named("delayq-dispatch")
                .status(!dispatcher.draining())
                .withData("replica", dispatcher.replicaId())
                .withData("state", dispatcher.draining() ? "draining: not taking jobs" : "taking")
                .withData("wakeUpSubscription", dispatcher.wakeUpsConnected() ? "connected" : "reconnecting");
        // Ready all the same: the replica works; the data says what an operator must fix.
        memory.policyWarning().ifPresent(w -> response.withData("redisMaxmemoryPolicy", w));
        return response.build();
    }
}
