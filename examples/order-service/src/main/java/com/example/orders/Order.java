package com.example.orders;

import java.math.BigDecimal;
import java.time.Instant;

/**
 * An order as the API shows it. Immutable: a change of state is a new value, swapped in
 * atomically by {@link Orders}.
 */
public record Order(String id, String item, BigDecimal amount, State state, Instant placedAt) {

    public enum State {
        /** Placed, waiting for payment; the close job is scheduled. */
        PENDING,
        /** Paid in time; the close job was cancelled (or finds it paid and leaves it). */
        PAID,
        /** Not paid within {@code orders.payment-timeout}; closed by the close job. */
        CLOSED
    }

    Order withState(State next) {
        return new Order(id, item, amount, next, placedAt);
    }
}
