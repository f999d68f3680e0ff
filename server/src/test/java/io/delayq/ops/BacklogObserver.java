package io.delayq.ops;

import java.util.concurrent.atomic.AtomicInteger;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;

/** The observer of OpsTest's backlog topic: counts what it runs, so the test sees the backlog worked off. */
@ApplicationScoped
public class BacklogObserver {
    public static final String TOPIC = "backlog";
    public static final AtomicInteger RUN = new AtomicInteger();

    void run(@Observes @JobTopic(TOPIC) Job job) {
        RUN.incrementAndGet();
    }
}
