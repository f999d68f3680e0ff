package io.delayq.ops;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.delayq.store.JobStore;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;

/**
 * Gauges of what waits in Redis, per topic: scheduled, inflight, dead, the jobs due now and the
 * age of the oldest of them — the alarm for a stalled runner and the signals to autoscale on.
 * They are read from Redis when scraped (cached for a few seconds), not on a timer: an idle,
 * unscraped replica costs Redis nothing for them. One scrape refresh costs one SMEMBERS and one
 * {@code stats} script per partition of every known topic (README "Autoscaling on the backlog").
 * Topics appear as they are discovered (on scrape, and as this replica enqueues).
 */
@ApplicationScoped
public class QueueGauges {
    private static final Logger LOG = Logger.getLogger(QueueGauges.class);
    private static final long CACHE_MS = 5_000;
    private final MeterRegistry registry;
    private final JobStore store;
    private final Set<String> registered = ConcurrentHashMap.newKeySet();
    private final Map<String, long[]> values = new ConcurrentHashMap<>();
    private volatile long refreshedAt;

    public QueueGauges(MeterRegistry registry, JobStore store) {
        this.registry = registry;
        this.store = store;
    }

    void onStart(@Observes StartupEvent event) {
        // Reading this gauge refreshes all of them, and registers topics seen since.
        Gauge.builder("delayq.topics", this, g -> g.refresh().size()).description("Topics known in Redis")
                .register(registry);
    }

    /** Registers the gauges of a topic (idempotent). */
    public void track(String topic) {
        if (!registered.add(topic)) {
            return;
        }
        gauge("delayq.queue.scheduled", topic, 0, "Jobs waiting for their runAt (or overdue)", null);
        gauge("delayq.queue.inflight", topic, 1, "Jobs leased to a replica", null);
        gauge("delayq.queue.dead", topic, 2, "Jobs in the dead set", null);
        gauge("delayq.queue.oldest.overdue", topic, 3, "Age of the oldest due job not yet taken", "seconds");
        // The autoscaling signal (k8s/autoscaling/): the backlog replicas have not taken yet.
        gauge("delayq.queue.due.now", topic, 4, "Jobs whose runAt has passed and that no replica has taken yet", null);
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
        refresh();
        long[] v = values.get(topic);
        if (v == null) {
            return Double.NaN;
        }
        return index == 3 ? v[3] / 1000.0 : v[index];
    }

    private synchronized Map<String, long[]> refresh() {
        long now = System.currentTimeMillis();
        if (now - refreshedAt < CACHE_MS) {
            return values;
        }
        refreshedAt = now;
        try {
            for (String topic : store.topicNames()) {
                track(topic);
                values.put(topic, store.gauges(topic));
            }
        } catch (RuntimeException e) {
            LOG.debugf("gauges not refreshed: %s", e.toString());
        }
        return values;
    }
}
