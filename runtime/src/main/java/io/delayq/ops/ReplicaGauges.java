package io.delayq.ops;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.delayq.core.DelayqConfig;
import io.delayq.dispatch.Dispatcher;
import io.delayq.dispatch.TopicRegistry;
import io.delayq.store.RedisGateway;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;

/**
 * What this replica does, for dashboards and alerts that look across replicas:
 * {@code delayq_topic_served{topic}} is 1 for every topic it serves (a topic with jobs and no
 * replica reporting it is served by nobody), {@code delayq_replica_ready} is 1 while it takes
 * jobs (takers running, not draining, Redis answering). A producer-only replica
 * ({@code delayq.dispatch.enabled=false}, or no observer) reports neither: it takes nothing.
 */
@ApplicationScoped
public class ReplicaGauges {

    void register(@Observes StartupEvent start, MeterRegistry registry, TopicRegistry topics, Dispatcher dispatcher,
            RedisGateway redis, DelayqConfig config) {
        if (!config.dispatch().enabled() || topics.handlers().isEmpty()) {
            return;
        }
        for (String topic : topics.handlers().keySet()) {
            Gauge.builder("delayq.topic.served", () -> 1).description("1 for each topic this replica serves")
                    .tag("topic", topic).register(registry);
        }
        Gauge.builder("delayq.replica.ready", dispatcher,
                d -> d.taking() && redis.answering() ? 1 : 0)
                .description("1 while this replica takes jobs: takers running, not draining, Redis answering")
                .strongReference(true)
                .register(registry);
    }
}
