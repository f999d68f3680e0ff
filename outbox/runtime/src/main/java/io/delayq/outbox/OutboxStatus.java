package io.delayq.outbox;

import java.util.concurrent.atomic.AtomicLong;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.arc.Unremovable;

/**
 * What the relay knows of the outbox, as metrics ({@code delayq_outbox_rows},
 * {@code delayq_outbox_oldest_age_seconds}, {@code delayq_outbox_relayed_total}) and in the
 * readiness check ({@link OutboxReadiness}).
 */
@ApplicationScoped
@Unremovable
public class OutboxStatus {
    private final AtomicLong rows = new AtomicLong();
    private final AtomicLong oldestAgeMs = new AtomicLong();
    private final Counter relayed;
    private volatile String problem;

    public OutboxStatus(MeterRegistry registry) {
        Gauge.builder("delayq.outbox.rows", rows, AtomicLong::get)
                .description("Jobs committed in the service's database, not yet relayed to Redis").register(registry);
        Gauge.builder("delayq.outbox.oldest.age", oldestAgeMs, ms -> ms.get() / 1000.0).baseUnit("seconds")
                .description("Age of the oldest row of the outbox, 0 when it is empty").register(registry);
        this.relayed = Counter.builder("delayq.outbox.relayed")
                .description("Rows of the outbox this replica relayed to Redis").register(registry);
    }

    void sized(long count, long oldestMs) {
        rows.set(count);
        oldestAgeMs.set(oldestMs);
    }

    void relayed(int n) {
        relayed.increment(n);
    }

    void problem(String what) {
        problem = what;
    }

    /** What keeps the relay from relaying (null: nothing). */
    public String problem() {
        return problem;
    }

    /** Rows waiting in the outbox, as last counted (every 5 s at most). */
    public long rows() {
        return rows.get();
    }

    /** Age of the oldest row, ms, as last measured. */
    public long oldestAgeMs() {
        return oldestAgeMs.get();
    }
}
