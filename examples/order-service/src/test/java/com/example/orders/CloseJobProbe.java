package com.example.orders;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;

/**
 * A second observer of {@code order-close}, in tests only: it counts every delivery of each
 * job, which the order's state alone cannot show (a second run finds the order CLOSED and
 * leaves it as it is).
 */
@ApplicationScoped
public class CloseJobProbe {
    private final Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();

    void count(@Observes @JobTopic(OrderTimeouts.TOPIC) Job job) {
        deliveries.computeIfAbsent(job.id(), id -> new AtomicInteger()).incrementAndGet();
    }

    int deliveries(String jobId) {
        AtomicInteger n = deliveries.get(jobId);
        return n == null ? 0 : n.get();
    }
}
