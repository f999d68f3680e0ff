package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.delayq.store.JobStore;
import io.delayq.store.Lease;
import io.delayq.store.Partition;

/**
 * Acks completed jobs in batches. Under load a partition's taker carries the acks in its next
 * take (one script call for both); this flusher sends what is left every few milliseconds, so
 * a job is acked within ~10 ms even when its taker sleeps. An ack lost with the process only
 * means the job runs again after its lease expires (at-least-once), never that it is lost.
 */
@ApplicationScoped
public class Acker {
    private static final Logger LOG = Logger.getLogger(Acker.class);
    private static final int MAX_BATCH = 1000;
    private static final long FLUSH_EVERY_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private final JobStore store;
    private final Map<Partition, ConcurrentLinkedQueue<Lease>> pending = new ConcurrentHashMap<>();
    private volatile Thread flusher;
    private volatile boolean running;

    public Acker(JobStore store) {
        this.store = store;
    }

    void ack(Partition p, Lease lease) {
        queue(p).add(lease);
    }

    private ConcurrentLinkedQueue<Lease> queue(Partition p) {
        ConcurrentLinkedQueue<Lease> q = pending.get(p);
        return q != null ? q : pending.computeIfAbsent(p, k -> new ConcurrentLinkedQueue<>());
    }

    /** Takes up to {@code max} pending acks of a partition (a taker sends them with its take). */
    List<Lease> drain(Partition p, int max) {
        ConcurrentLinkedQueue<Lease> q = pending.get(p);
        if (q == null || q.isEmpty()) {
            return List.of();
        }
        List<Lease> out = new ArrayList<>();
        for (Lease l; out.size() < max && (l = q.poll()) != null;) {
            out.add(l);
        }
        return out;
    }

    /** Gives back acks whose carrying take failed; acking twice is harmless (token check). */
    void restore(Partition p, List<Lease> leases) {
        queue(p).addAll(leases);
    }

    /** Logs acks that came after their lease expired (the new attempt stands). */
    static void reportStale(Partition p, List<String> stale) {
        if (!stale.isEmpty()) {
            LOG.warnf("ack of %d job(s) of %s came after their lease expired; the new attempt stands: %s",
                    stale.size(), p, stale);
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
        while (true) {
            boolean stopping = !running;
            if (!stopping) {
                LockSupport.parkNanos(backoffMs > 0 ? TimeUnit.MILLISECONDS.toNanos(backoffMs) : FLUSH_EVERY_NANOS);
            }
            boolean failed = false;
            for (Map.Entry<Partition, ConcurrentLinkedQueue<Lease>> e : pending.entrySet()) {
                List<Lease> batch;
                while (!(batch = drain(e.getKey(), MAX_BATCH)).isEmpty()) {
                    try {
                        reportStale(e.getKey(), store.ack(e.getKey(), batch));
                    } catch (RuntimeException ex) {
                        restore(e.getKey(), batch);
                        failed = true;
                        LOG.warnf("ack failed, retrying: %s", ex.toString());
                        break;
                    }
                }
            }
            backoffMs = failed ? Math.min(1000, Math.max(50, backoffMs * 2)) : 0;
            if (stopping) {
                return; // flushed; with Redis away the leases expire and the jobs run again
            }
        }
    }
}
