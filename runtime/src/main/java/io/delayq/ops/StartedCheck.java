package io.delayq.ops;

import jakarta.enterprise.context.ApplicationScoped;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Startup;

import io.delayq.dispatch.Dispatcher;

/** Startup UP once dispatch has started (takers running for every served topic). */
@Startup
@ApplicationScoped
public class StartedCheck implements HealthCheck {
    private final Dispatcher dispatcher;

    public StartedCheck(Dispatcher dispatcher) {
        this.dispatcher = dispatcher;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("delayq-started").status(dispatcher.started())
                .withData("servedPartitions", dispatcher.partitions().size()).build();
    }
}
