package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.delayq.store.JobQueue;
import io.delayq.store.Lease;
import io.delayq.store.Partition;

/**
 * Acks completed jobs in batches. Under load a partition's taker carries the acks in its next
 * take (one script call for both); this flusher sends what is left every few milliseconds, so
 * a job is acked within ~10 ms even when its taker sleeps. An ack lost with the process only
 * means the job runs again after its lease expires (at-least-once), never that it is lost.
 * <p>
 * A job is finished only once its ack is in Redis: until then its lease is still ours, and the
 * {@link LeaseHeartbeat} extends it ({@link #forEachUnconfirmed}) — a Redis outage longer than the
 * lease must not let another replica retake a job that is done here. Each partition flushes on
 * its own, asynchronously, and backs off on its own: on a Redis Cluster a master that does not
 * answer holds back only its own partitions' acks.
 */
@ApplicationScoped
public class Acker {
    private static final Logger LOG = Logger.getLogger(Acker.class);
    private static final int MAX_BATCH = 1000;
    /**
     * The most bytes of results (result-retention) one ack call carries, beyond its first ack: a
     * script runs alone on its Redis, and a thousand acks with results near the payload limit would
     * hold every client of that Redis (enqueues of all topics included) for seconds (a review measured
     * 145 ms for 100 acks of 65 KB results on a loaded machine; 1 MiB is a sixth of that). A call
     * always carries one ack, however large its result.
     */
    static final int MAX_BATCH_RESULT_BYTES = 1 << 20;
    private static final long FLUSH_EVERY_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private final JobQueue store;
    private final ReclaimGate gate;
    private final Map<Partition, Flush> flushes = new ConcurrentHashMap<>();
    private volatile Thread flusher;
    private volatile boolean running;
    /** Until when a stopping flusher keeps trying to send what is left. */
    private volatile long stopDeadlineNanos = Long.MAX_VALUE;

    /** One partition's acks: queued to send, and every one not yet known to be in Redis. */
    private static final class Flush {
        final ConcurrentLinkedQueue<Lease> pending = new ConcurrentLinkedQueue<>();
        final Set<Lease> unconfirmed = ConcurrentHashMap.newKeySet();
        // Flusher state, under the Flush's lock: one batch in flight per partition at a time.
        boolean sending;
        long backoffMs;
        long notBeforeNanos;
    }

    public Acker(JobQueue store, ReclaimGate gate) {
        this.store = store;
        this.gate = gate;
    }

    void ack(Partition p, Lease lease) {
        ack(p, lease, null);
    }

    /**
     * As above, with the result its topic keeps ({@code result-retention}): a field made by
     * {@link io.delayq.store.ResultRetention}, null for none. It goes in the same script call as
     * the ack, and is held until that call succeeded.
     */
    void ack(Partition p, Lease lease, String result) {
        if (result != null) {
            store.stageResult(lease, result);
        }
        Flush f = flush(p);
        f.unconfirmed.add(lease);
        f.pending.add(lease);
    }

    private Flush flush(Partition p) {
        Flush f = flushes.get(p);
        return f != null ? f : flushes.computeIfAbsent(p, k -> new Flush());
    }

    /**
     * Takes up to {@code max} pending acks of a partition (a taker sends them with its take), and
     * results of at most {@link #MAX_BATCH_RESULT_BYTES} beyond the first ack's: the ack that would
     * pass that goes back to the queue, for the next call.
     */
    List<Lease> drain(Partition p, int max) {
        Flush f = flushes.get(p);
        if (f == null || f.pending.isEmpty()) {
            return List.of();
        }
        List<Lease> out = new ArrayList<>();
        long bytes = 0;
        for (Lease l; out.size() < max && (l = f.pending.poll()) != null;) {
            String result = store.stagedResult(l);
            int size = result == null ? 0 : ResultFields.utf8(result);
            if (!out.isEmpty() && bytes + size > MAX_BATCH_RESULT_BYTES) {
                // Behind the others now: each call takes the queue's head, so it is sent soon.
                f.pending.add(l);
                break;
            }
            bytes += size;
            out.add(l);
        }
        return out;
    }

    /** Gives back acks whose carrying take failed; acking twice is harmless (token check). */
    void restore(Partition p, List<Lease> leases) {
        if (!leases.isEmpty()) {
            flush(p).pending.addAll(leases);
        }
    }

    /**
     * Acks that reached Redis (carried by a take that succeeded; stale ones included: their lease
     * is not ours any more): their leases need no extending.
     */
    void confirm(Partition p, List<Lease> leases) {
        if (!leases.isEmpty()) {
            flush(p).unconfirmed.removeAll(leases);
            store.acksSettled(leases);
        }
    }

    /** Every acked lease not yet known to be in Redis, with its partition (the heartbeat extends them). */
    void forEachUnconfirmed(BiConsumer<Partition, Lease> each) {
        flushes.forEach((p, f) -> f.unconfirmed.forEach(l -> each.accept(p, l)));
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
        stopDeadlineNanos = Long.MAX_VALUE;
        flusher = Thread.ofPlatform().name("delayq-acker").daemon().start(this::loop);
    }

    /** Stops the flusher after it sent every pending ack (or Redis stayed away until the deadline). */
    synchronized void stop(long deadlineNanos) throws InterruptedException {
        Thread t = flusher;
        if (t == null) {
            return;
        }
        stopDeadlineNanos = deadlineNanos;
        running = false;
        LockSupport.unpark(t);
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime())));
        flusher = null;
    }

    private void loop() {
        while (true) {
            LockSupport.parkNanos(FLUSH_EVERY_NANOS);
            sendReady();
            if (!running && (flushed() || System.nanoTime() - stopDeadlineNanos > 0)) {
                return; // flushed; with Redis away the leases expire and the jobs run again
            }
        }
    }

    /** Whether no ack waits to be sent or is in flight. */
    private boolean flushed() {
        for (Flush f : flushes.values()) {
            synchronized (f) {
                if (f.sending || !f.pending.isEmpty()) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Sends one batch of each partition that has acks, none in flight, and no back-off running. */
    private void sendReady() {
        long now = System.nanoTime();
        flushes.forEach((p, f) -> {
            if (f.pending.isEmpty()) {
                return;
            }
            synchronized (f) {
                if (f.sending || now - f.notBeforeNanos < 0) {
                    return;
                }
                f.sending = true;
            }
            List<Lease> batch = drain(p, MAX_BATCH);
            if (batch.isEmpty()) {
                synchronized (f) {
                    f.sending = false;
                }
                return;
            }
            send(p, f, batch);
        });
    }

    private void send(Partition p, Flush f, List<Lease> batch) {
        long sentNanos = System.nanoTime();
        io.vertx.core.Future<List<String>> reply;
        try {
            reply = store.ackAsync(p, batch);
        } catch (RuntimeException e) {
            reply = io.vertx.core.Future.failedFuture(e);
        }
        reply.onComplete(done -> {
            if (done.succeeded()) {
                f.unconfirmed.removeAll(batch);
                store.acksSettled(batch);
                gate.answered(p, sentNanos);
                reportStale(p, done.result());
            } else {
                f.pending.addAll(batch);
                if (done.cause() instanceof io.delayq.store.StoreUnavailableException) {
                    gate.failed(p); // an error reply (a bug, WRONGTYPE) says nothing of Redis being away
                }
            }
            boolean more;
            synchronized (f) {
                f.sending = false;
                if (done.succeeded()) {
                    f.backoffMs = 0;
                    f.notBeforeNanos = 0;
                } else {
                    if (f.backoffMs == 0) {
                        LOG.warnf("ack on %s failed, retrying: %s", p, done.cause().toString());
                    }
                    f.backoffMs = Math.min(1000, Math.max(50, f.backoffMs * 2));
                    f.notBeforeNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(f.backoffMs);
                }
                more = done.succeeded() && !f.pending.isEmpty();
            }
            Thread t = flusher;
            if (more && t != null) {
                LockSupport.unpark(t); // a backlog beyond one batch goes on at once
            }
        });
    }
}
