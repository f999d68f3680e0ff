package com.example.orders;

import java.time.Duration;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;

/** The service's own settings, {@code orders.*} in application.properties. */
@ConfigMapping(prefix = "orders")
public interface OrdersConfig {

    /** How long an order may stay unpaid before it is closed. Default 30 minutes. */
    @WithDefault("30m")
    Duration paymentTimeout();

    /** Place one order at start-up, so that dev mode shows a job firing. Default false. */
    @WithDefault("false")
    boolean demo();
}
