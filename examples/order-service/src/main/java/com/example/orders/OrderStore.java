package com.example.orders;

import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import jakarta.enterprise.context.ApplicationScoped;

import com.example.orders.Order.State;

/**
 * Where orders live. In memory to keep the example small: a real service keeps them in its
 * database, and {@link #move} becomes a conditional update
 * ({@code UPDATE orders SET state = ? WHERE id = ? AND state = ?}).
 */
@ApplicationScoped
public class OrderStore {
    private final ConcurrentMap<String, Order> orders = new ConcurrentHashMap<>();

    void add(Order order) {
        orders.put(order.id(), order);
    }

    Optional<Order> find(String id) {
        return Optional.ofNullable(orders.get(id));
    }

    long count(State state) {
        return orders.values().stream().filter(o -> o.state() == state).count();
    }

    /**
     * Moves an order from {@code from} to {@code to} if it is in {@code from}, atomically:
     * payment and the close job may race for the same order, and exactly one must win.
     *
     * @return true when this call moved it
     */
    boolean move(String id, State from, State to) {
        boolean[] moved = { false };
        orders.computeIfPresent(id, (key, order) -> {
            if (order.state() != from) {
                return order;
            }
            moved[0] = true;
            return order.withState(to);
        });
        return moved[0];
    }
}
