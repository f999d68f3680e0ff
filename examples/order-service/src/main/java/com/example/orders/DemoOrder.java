package com.example.orders;

import java.math.BigDecimal;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.quarkus.runtime.StartupEvent;

/**
 * With {@code orders.demo=true} (on in dev mode), places one order at start-up and leaves it
 * unpaid, so the log shows a job firing without anyone calling the API.
 */
@ApplicationScoped
public class DemoOrder {
    private static final Logger LOG = Logger.getLogger(DemoOrder.class);

    void placeOne(@Observes StartupEvent start, OrdersConfig config, Orders orders) {
        if (!config.demo()) {
            return;
        }
        Order order = orders.place("demo", new BigDecimal("9.99"));
        LOG.infof("placed demo order %s; unpaid, it closes in %s (orders.payment-timeout)", order.id(),
                config.paymentTimeout().toString().substring(2).toLowerCase());
    }
}
