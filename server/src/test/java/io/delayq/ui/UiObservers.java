package io.delayq.ui;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;

/** The dashboard tests' observers: "ui-dead" fails while {@link #FAIL} is set; "ui-run" only counts. */
@ApplicationScoped
public class UiObservers {
    static final AtomicBoolean FAIL = new AtomicBoolean(true);
    static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();

    void dead(@Observes @JobTopic("ui-dead") Job job) {
        RUNS.computeIfAbsent(job.id(), k -> new AtomicInteger()).incrementAndGet();
        if (FAIL.get()) {
            throw new IllegalStateException("refused by the test: <b>not bold</b>");
        }
    }

    void run(@Observes @JobTopic("ui-run") Job job) {
        RUNS.computeIfAbsent(job.id(), k -> new AtomicInteger()).incrementAndGet();
    }
}
