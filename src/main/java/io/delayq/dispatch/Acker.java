package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.delayq.store.JobStore;
import io.delayq.store.Lease;
import io.delayq.store.Partition;

/**
 * Acks completed jobs in batches: one flusher thread sends everything that completed while its
 * previous ack call was on the wire, so at high rates one script call acks many jobs and at low
 * rates a job is acked at once. An ack lost with the process only means the job runs again
 * after its lease expires (at-least-once), never that it is lost.
 */
@ApplicationScoped
public class Acker {
    private static final Logger LOG = Logger.getLogger(Acker.class);
    private static final int MAX_BATCH = 1000;
    private final JobStore store;
    private final ConcurrentLinkedQueue<Object[]> pending = new ConcurrentLinkedQueue<>();
    private volatile Thread flusher;
    private volatile boolean running;

    public Acker(JobStore store) {
        this.store = store;
    }

    void ack(Partition p, Lease lease) {
        pending.add(new Object[] { p, lease });
        Thread t = flusher;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    synchronized void start() {
        if (running) {
            return;
        }
        running = true;
        flusher = Thread.ofPlatform().name("delayq-acker").daemon().start(this::loop);
    }

    /** Stops the flusher after it sent every pending ack (or Redis stayed away until the deadline). */
    synchronized void stop(long deadlineNanos) throws InterruptedException {
        running = false;
        Thread t = flusher;
        if (t != null) {
            LockSupport.unpark(t);
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime())));
        }
        flusher = null;
    }

    private void loop() {
        long backoffMs = 0;
        while (running || !pending.isEmpty()) {
            if (pending.isEmpty()) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
                continue;
            }
            Map<Partition, List<Lease>> batch = new HashMap<>();
            List<Object[]> taken = new ArrayList<>();
            for (Object[] e; taken.size() < MAX_BATCH && (e = pending.poll()) != null;) {
                taken.add(e);
                batch.computeIfAbsent((Partition) e[0], p -> new ArrayList<>()).add((Lease) e[1]);
            }
            try {
                for (Map.Entry<Partition, List<Lease>> e : batch.entrySet()) {
                    List<String> stale = store.ack(e.getKey(), e.getValue());
                    if (!stale.isEmpty()) {
                        LOG.warnf("ack of %d job(s) of %s came after their lease expired; the new attempt stands: %s",
                                stale.size(), e.getKey(), stale);
                    }
                }
                backoffMs = 0;
            } catch (RuntimeException ex) {
                // Keep them: acking twice is harmless (the token check makes the second a no-op).
                pending.addAll(taken);
                backoffMs = Math.min(1000, Math.max(50, backoffMs * 2));
                LOG.warnf("ack failed, retrying in %d ms: %s", backoffMs, ex.toString());
                if (!running) {
                    return; // stopping with Redis away: the leases expire and the jobs run again
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(backoffMs));
            }
        }
    }

    /** Acks not yet sent (for tests and drain logs). */
    int pendingCount() {
        return pending.size();
    }
}
