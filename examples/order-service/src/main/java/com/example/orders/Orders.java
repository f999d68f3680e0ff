package com.example.orders;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import com.example.orders.Order.State;

import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.store.StoreUnavailableException;

/**
 * Placing and paying orders. Placing schedules the order's close job (topic
 * {@value OrderTimeouts#TOPIC}, job id = order id) due after {@code orders.payment-timeout};
 * paying cancels it.
 */
@ApplicationScoped
public class Orders {
    private static final Logger LOG = Logger.getLogger(Orders.class);

    private final OrderStore store;
    private final Jobs jobs;
    private final OrdersConfig config;

    public Orders(OrderStore store, Jobs jobs, OrdersConfig config) {
        this.store = store;
        this.jobs = jobs;
        this.config = config;
    }

    /**
     * Places an order, PENDING until paid. The close job is scheduled before the order is saved:
     * a job whose order was never saved finds nothing and does nothing, whereas an order saved
     * without its job would never close. If Redis is down the call fails (503) and no order exists.
     */
    public Order place(String item, BigDecimal amount) {
        String id = UUID.randomUUID().toString();
        // The order id is the job id: payment can cancel the job by it, and scheduling the same
        // id twice (a retried request) keeps one job.
        jobs.schedule(JobRequest.topic(OrderTimeouts.TOPIC).id(id).payload(new OrderClose(id))
                .delay(config.paymentTimeout()));
        Order order = new Order(id, item, amount, State.PENDING, Instant.now());
        store.add(order);
        return order;
    }

    public Optional<Order> find(String id) {
        return store.find(id);
    }

    /**
     * Pays a PENDING order, then cancels its close job; paying a PAID order again is a no-op.
     * Returns the order as it is afterwards: PAID, or CLOSED when the close job got there first.
     * <p>
     * The state change decides the race, not the cancel: the job may already be running when
     * the payment arrives (cancel answers "in flight"), or Redis may be unreachable. Either way
     * the job, when it runs, finds the order PAID and leaves it — see {@link OrderTimeouts}.
     * Cancelling only saves that run.
     */
    public Optional<Order> pay(String id) {
        store.move(id, State.PENDING, State.PAID);
        Optional<Order> order = store.find(id);
        if (order.isPresent() && order.get().state() == State.PAID) {
            cancelCloseJob(id);
        }
        return order;
    }

    private void cancelCloseJob(String id) {
        try {
            switch (jobs.cancel(OrderTimeouts.TOPIC, id)) {
                case CANCELLED -> LOG.debugf("order %s paid: its close job is cancelled", id);
                case INFLIGHT -> LOG.infof("order %s paid while its close job runs; the job will find it paid", id);
                case UNKNOWN -> LOG.debugf("order %s paid: no close job left to cancel", id);
                case DEAD -> LOG.warnf("order %s paid: its close job is in the dead set", id);
            }
        } catch (StoreUnavailableException e) {
            LOG.warnf("order %s paid, but its close job could not be cancelled (%s); it will find the order paid",
                    id, e.getMessage());
        }
    }
}
