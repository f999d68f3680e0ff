package io.delayq.outbox;

import jakarta.enterprise.context.ApplicationScoped;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * The outbox in the readiness check: rows waiting, the oldest one's age, and whether the relay is
 * held up (Redis or the database down). Always up: rows waiting while Redis is down are the outbox
 * doing its job, and failing the check would take the service out of its load balancer for a
 * fault that loses nothing (the alert on {@code delayq_outbox_oldest_age_seconds} is for people).
 */
@Readiness
@ApplicationScoped
public class OutboxReadiness implements HealthCheck {
    private final OutboxStatus status;

    public OutboxReadiness(OutboxStatus status) {
        this.status = status;
    }

    @Override
    public HealthCheckResponse call() {
        String problem = status.problem();
        return HealthCheckResponse.named("delayq-outbox").up().withData("rows", status.rows())
                .withData("oldestAgeSeconds", status.oldestAgeMs() / 1000)
                .withData("relay", problem == null ? "relaying" : "waiting: " + problem).build();
    }
}
