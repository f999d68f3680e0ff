package com.example.orders;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import com.example.orders.Order.State;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;

/**
 * Closes orders left unpaid: delayq hands each due {@value #TOPIC} job to {@link #close}.
 * <p>
 * Delivery is at least once, and a payment may arrive while the job runs, so the observer
 * never assumes: it closes the order only if it is still PENDING, in one atomic step that
 * a payment cannot interleave with. Running it twice, or after the payment, changes nothing.
 */
@ApplicationScoped
public class OrderTimeouts {
    static final String TOPIC = "order-close";
    private static final Logger LOG = Logger.getLogger(OrderTimeouts.class);

    private final OrderStore store;

    public OrderTimeouts(OrderStore store) {
        this.store = store;
    }

    /** Returning normally acknowledges the job; a throw would have it retried with backoff. */
    void close(@Observes @JobTopic(TOPIC) Job job) {
        String id = job.payload(OrderClose.class).orderId();
        if (store.move(id, State.PENDING, State.CLOSED)) {
            LOG.infof("closed unpaid order %s (attempt %d)", id, job.attempt());
            return;
        }
        store.find(id).ifPresentOrElse(
                order -> LOG.debugf("order %s is %s: nothing to close", id, order.state()),
                // Scheduled, but the order was never saved (see Orders.place): nothing to close.
                () -> LOG.debugf("no order %s: nothing to close", id));
    }
}
