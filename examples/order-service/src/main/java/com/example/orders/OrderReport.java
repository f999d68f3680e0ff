package com.example.orders;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import com.example.orders.Order.State;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;

/**
 * The orders report, run by the recurring schedule {@code order-report} (see
 * application.properties): each tick is one {@value #TOPIC} job, whichever replica fires it and
 * however many run, so the report is logged once per tick across the deployment.
 */
@ApplicationScoped
public class OrderReport {
    static final String TOPIC = "order-report";
    private static final Logger LOG = Logger.getLogger(OrderReport.class);

    private final OrderStore store;
    private final AtomicReference<String> last = new AtomicReference<>();

    public OrderReport(OrderStore store) {
        this.store = store;
    }

    void report(@Observes @JobTopic(TOPIC) Job job) {
        Map<State, Long> counts = new EnumMap<>(State.class);
        for (State s : State.values()) {
            counts.put(s, store.count(s));
        }
        String line = String.format("orders: %d pending, %d paid, %d closed", counts.get(State.PENDING),
                counts.get(State.PAID), counts.get(State.CLOSED));
        last.set(job.id() + " " + line);
        LOG.infof("%s (job %s)", line, job.id());
    }

    /** The last report: its job id (schedule name and tick, or a trigger's time) and its line. */
    String last() {
        return last.get();
    }
}
