package io.delayq.ops;

import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.store.HistoryStore;
import io.delayq.store.RedisClock;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.scheduler.Scheduled;

/**
 * Records the history ({@code delayq.history.enabled}): turns the in-memory counting on at start
 * (minutes by this replica's estimate of Redis' clock, the clock lateness is measured with), adds
 * what was counted to Redis every {@code delayq.history.flush-interval}, and once more at shutdown,
 * after the drain (so the jobs that finished during it are in).
 */
@ApplicationScoped
public class HistoryRecorder {
    private static final Logger LOG = Logger.getLogger(HistoryRecorder.class);
    private final HistoryStore store;
    private final RedisClock clock;
    private final boolean enabled;
    private volatile boolean failing;

    public HistoryRecorder(HistoryStore store, RedisClock clock, DelayqConfig config) {
        this.store = store;
        this.clock = clock;
        this.enabled = config.history().enabled();
    }

    void onStart(@Observes StartupEvent event) {
        if (enabled) {
            store.counts().enable(clock::redisNow);
        }
    }

    @Scheduled(every = "${delayq.history.flush-interval:10s}", delayed = "1s",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void scheduledFlush() {
        if (enabled) {
            flush();
        }
    }

    /** Adds what this replica counted to Redis now; returns the script calls made (0: nothing counted). */
    public synchronized int flush() {
        try {
            int calls = store.flush();
            if (failing) {
                LOG.info("the history is written again");
                failing = false;
            }
            return calls;
        } catch (RuntimeException e) {
            if (!failing) {
                LOG.warnf("could not write the history (kept for the next flush): %s", e.toString());
                failing = true;
            }
            return -1;
        }
    }

    /** After the drain (Dispatcher's, priority 1), before the replica withdraws its entry (10). */
    void onStop(@Observes @Priority(5) ShutdownEvent event) {
        if (enabled) {
            flush();
            store.counts().disable();
        }
    }
}
