package io.delayq.ops;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.delayq.store.Inspection;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;

/**
 * Gauges of what waits in Redis, per topic: scheduled, inflight, dead, the jobs due now and the
 * age of the oldest of them — the alarm for a stalled runner and the signals to autoscale on.
 * They are read from Redis when scraped (cached for a few seconds), not on a timer: an idle,
 * unscraped replica costs Redis nothing for them. Only this replica's own topics
 * ({@link LocalTopics}) have them: a scrape refresh runs one {@code stats} script per partition of
 * those, however many topics Redis knows (docs/kubernetes.md, "Autoscaling on the backlog"); the replicas that
 * serve a topic report it. {@code delayq_topics} counts every topic Redis knows.
 */
@ApplicationScoped
public class QueueGauges {
    private static final Logger LOG = Logger.getLogger(QueueGauges.class);
    private static final long CACHE_NANOS = 5_000_000_000L;
    private final MeterRegistry registry;
    private final Inspection store;
    private final LocalTopics local;
    private final Map<String, long[]> values = new ConcurrentHashMap<>();
    private volatile long topicCount;
    private long refreshedAtNanos;
    private boolean refreshed;

    public QueueGauges(MeterRegistry registry, Inspection store, LocalTopics local) {
        this.registry = registry;
        this.store = store;
        this.local = local;
    }

    void onStart(@Observes StartupEvent event) {
        // Reading this gauge refreshes all of them.
        Gauge.builder("delayq.topics", this, g -> g.refresh().topicCount).description("Topics known in Redis")
                .register(registry);
        for (String topic : local.all()) {
            gauge("delayq.queue.scheduled", topic, 0, "Jobs waiting for their runAt (or overdue)", null);
            gauge("delayq.queue.inflight", topic, 1, "Jobs leased to a replica", null);
            gauge("delayq.queue.dead", topic, 2, "Jobs in the dead set", null);
            gauge("delayq.queue.oldest.overdue", topic, 3, "Age of the oldest due job not yet taken", "seconds");
            // The autoscaling signal (k8s/autoscaling/): the backlog replicas have not taken yet.
            gauge("delayq.queue.due.now", topic, 4, "Jobs whose runAt has passed and that no replica has taken yet", null);
            // Due jobs of a paused topic wait for its resume, not for replicas: the autoscaling
            // queries leave paused topics out (more replicas would take none of them).
            gauge("delayq.topic.paused", topic, 5, "1 while the topic is paused (no replica takes its jobs), else 0", null);
            // Part of scheduled; not due now: more replicas would not run them sooner.
            gauge("delayq.queue.held", topic, 6, "Jobs whose group is at its group-max-in-flight, waiting for the group's"
                    + " running jobs to end (part of scheduled)", null);
        }
    }

    private void gauge(String name, String topic, int index, String description, String unit) {
        Gauge.Builder<QueueGauges> b = Gauge.builder(name, this, g -> g.value(topic, index)).description(description)
                .tag("topic", topic);
        if (unit != null) {
            b.baseUnit(unit);
        }
        b.register(registry);
    }

    private double value(String topic, int index) {
        long[] v = refresh().values.get(topic);
        if (v == null) {
            return Double.NaN;
        }
        return index == 3 ? v[3] / 1000.0 : v[index];
    }

    private synchronized QueueGauges refresh() {
        long now = System.nanoTime();
        if (refreshed && now - refreshedAtNanos < CACHE_NANOS) {
            return this;
        }
        refreshed = true;
        refreshedAtNanos = now;
        try {
            topicCount = store.topicCount();
            for (String topic : local.all()) {
                values.put(topic, store.gauges(topic));
            }
        } catch (RuntimeException e) {
            LOG.debugf("gauges not refreshed: %s", e.toString());
        }
        return this;
    }
}
