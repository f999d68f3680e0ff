package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.store.JobQueue;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.store.TakenJob;
import io.vertx.core.Future;

/**
 * Extends every lease this replica holds, so that nobody retakes a job it still has: the leases
 * of running jobs, and of finished jobs whose ack is not in Redis yet (a job is finished only once
 * its ack is stored; until then its lease is ours to keep).
 * <p>
 * Each partition beats on its own: every partition's extend is sent at once and judged by its own
 * reply, so that a Redis Cluster master that does not answer delays only its own partitions'
 * leases, never those on healthy masters. A partition whose extend failed is tried again every
 * {@value #RETRY_MS} ms instead of a heartbeat later: after an outage the leases must be extended
 * as soon as Redis answers, before the lease runs out under them (other replicas hold their
 * reclaims for a lease after an outage; see {@link ReclaimGate}). The loop also notices when this
 * replica itself was frozen (it woke far too late) and then extends everything at once.
 * <p>
 * A lease that is no longer ours (it expired while this replica was cut off or frozen, and another
 * replica retook the job) is logged: that job may now run twice, and the late ack of this attempt
 * is refused by its token.
 * <p>
 * The safety net of a cancel (cancel.lua marks the lease and tells its holder by a wake-up
 * message, which may be lost): every extend's reply names the jobs among ours whose cancel was
 * asked, and between extends (a heartbeat is 10 s by default) the marks of the running jobs' leases
 * are read every {@link JobQueue#CANCEL_CHECK_MS} ms, one read-only HMGET per partition that runs
 * jobs here; a partition running none costs nothing. The attempts named end through the
 * {@link WorkerPool} that runs them.
 */
@ApplicationScoped
public class LeaseHeartbeat {
    private static final Logger LOG = Logger.getLogger(LeaseHeartbeat.class);
    /** A failed partition's extend is tried again this soon. */
    static final long RETRY_MS = 500;
    /** How often the loop looks for partitions whose beat is due (it sends only those). */
    private static final long TICK_MS = 200;
    private final Dispatcher dispatcher;
    private final JobQueue store;
    private final Acker acker;
    private final ReclaimGate gate;
    private final long leaseMs;
    private final long heartbeatNanos;
    private final long timeoutMs;
    /** Partitions holding leases: when each beats next, and whether its extend is in flight. */
    private final Map<Partition, Beat> beats = new ConcurrentHashMap<>();
    /**
     * Partitions whose cancel check is unanswered: at most one at a time each. A replica cut off from
     * Redis must not queue a read a second on its connections (every byte written into a cut link
     * grows TCP's retransmission backoff, and a take written after the link is back then waits for
     * the next retransmission: seconds).
     */
    private final Set<Partition> checking = ConcurrentHashMap.newKeySet();
    /** Lost leases already logged, while their attempts still run. */
    private final Map<Lease, Boolean> reported = new ConcurrentHashMap<>();
    private volatile boolean running;
    private volatile Thread thread;

    private static final class Beat {
        long dueNanos;
        boolean sending;

        Beat(long dueNanos) {
            this.dueNanos = dueNanos;
        }
    }

    public LeaseHeartbeat(Dispatcher dispatcher, JobQueue store, Acker acker, ReclaimGate gate, DelayqConfig config) {
        this.dispatcher = dispatcher;
        this.store = store;
        this.acker = acker;
        this.gate = gate;
        this.leaseMs = config.dispatch().lease().toMillis();
        this.heartbeatNanos = config.dispatch().heartbeat().toNanos();
        this.timeoutMs = config.redisTimeout().toMillis();
    }

    synchronized void start() {
        if (running) {
            return;
        }
        running = true;
        thread = Thread.ofPlatform().name("delayq-heartbeat").daemon().start(this::loop);
    }

    /** Stops the loop: after the drain, when nothing this replica held is left to extend. */
    synchronized void stop() {
        running = false;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
        thread = null;
    }

    private void loop() {
        long tickNanos = TimeUnit.MILLISECONDS.toNanos(TICK_MS);
        long last = System.nanoTime();
        long checkNanos = TimeUnit.MILLISECONDS.toNanos(JobQueue.CANCEL_CHECK_MS);
        long checked = last;
        while (running) {
            LockSupport.parkNanos(tickNanos);
            long now = System.nanoTime();
            long late = now - last - tickNanos;
            last = now;
            if (!running) {
                return;
            }
            try {
                if (late > gate.freezeThresholdNanos()) {
                    // Frozen (GC, a stopped VM or process): our leases may be about to run out,
                    // or have: extend every one now rather than at each partition's turn.
                    gate.frozen(dispatcher.partitions(), late);
                    send(true);
                } else {
                    send(false);
                }
                if (now - checked >= checkNanos) {
                    checked = now;
                    checkCancels();
                }
            } catch (RuntimeException e) {
                LOG.warnf("lease heartbeat failed: %s", e.toString());
            }
        }
    }

    /**
     * One beat of every partition that holds leases, now, waited for (up to the Redis timeout):
     * what tests call to see the heartbeat's effect at once.
     */
    void beat() {
        List<Future<Void>> sent = send(true);
        try {
            Future.join(sent).toCompletionStage().toCompletableFuture().get(timeoutMs + 1000, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            LOG.debugf("heartbeat: not every partition answered: %s", e.toString());
        }
    }

    /** Sends the extend of each partition whose beat is due (of all, when {@code all}), each at once. */
    private List<Future<Void>> send(boolean all) {
        Map<Partition, Set<Lease>> held = held();
        beats.keySet().retainAll(held.keySet());
        long now = System.nanoTime();
        List<Future<Void>> sent = new ArrayList<>();
        held.forEach((p, leases) -> {
            // A partition that just got its first lease beats a heartbeat from now: the lease is fresh.
            Beat b = beats.computeIfAbsent(p, k -> new Beat(now + heartbeatNanos));
            synchronized (b) {
                if (b.sending || (!all && now - b.dueNanos < 0)) {
                    return;
                }
                b.sending = true;
            }
            sent.add(extend(p, b, List.copyOf(leases)));
        });
        return sent;
    }

    /**
     * Reads the cancel marks of the running jobs' leases, per partition at once (not one whose
     * extend is in flight: its reply says the same), and ends the attempts whose cancel was asked.
     */
    private void checkCancels() {
        Map<Partition, List<Lease>> byPartition = new HashMap<>();
        for (WorkerPool pool : dispatcher.pools()) {
            for (TakenJob job : pool.running().values()) {
                byPartition.computeIfAbsent(job.partition(), p -> new ArrayList<>()).add(job.lease());
            }
        }
        byPartition.forEach((p, leases) -> {
            Beat b = beats.get(p);
            if (b != null) {
                synchronized (b) {
                    if (b.sending) {
                        return;
                    }
                }
            }
            if (!checking.add(p)) {
                return;
            }
            try {
                store.cancelledAsync(p, leases).onComplete(done -> {
                    checking.remove(p);
                    if (done.succeeded()) {
                        endCancelled(p, leases, done.result());
                    } else {
                        LOG.debugf("cancel check of %s failed: %s", p, done.cause().toString());
                    }
                });
            } catch (RuntimeException e) {
                checking.remove(p);
                LOG.debugf("cancel check of %s failed: %s", p, e.toString());
            }
        });
    }

    /** Ends the attempts of the leases whose job is among {@code cancelledIds}. */
    private void endCancelled(Partition p, List<Lease> leases, List<String> cancelledIds) {
        if (cancelledIds.isEmpty()) {
            return;
        }
        Set<String> ids = Set.copyOf(cancelledIds);
        for (Lease l : leases) {
            if (ids.contains(l.id()) && dispatcher.cancel(p, l.id(), l.token())) {
                LOG.debugf("cancel of %s/%s found by the heartbeat", p.topic(), l.id());
            }
        }
    }

    /**
     * Every lease ours by partition: running jobs (after a lost lease this replica can hold two
     * leases of one id, the stale attempt still running and the retaken one, and the current one
     * must be extended whatever the order), and finished jobs whose ack is not in Redis yet.
     */
    private Map<Partition, Set<Lease>> held() {
        Map<Partition, Set<Lease>> byPartition = new HashMap<>();
        for (WorkerPool pool : dispatcher.pools()) {
            for (TakenJob job : pool.running().values()) {
                byPartition.computeIfAbsent(job.partition(), p -> new LinkedHashSet<>()).add(job.lease());
            }
        }
        acker.forEachUnconfirmed((p, lease) -> byPartition.computeIfAbsent(p, k -> new LinkedHashSet<>()).add(lease));
        return byPartition;
    }

    private Future<Void> extend(Partition p, Beat b, List<Lease> leases) {
        long sentNanos = System.nanoTime();
        Future<JobQueue.Extended> reply;
        try {
            reply = store.extendAsync(p, leaseMs, leases);
        } catch (RuntimeException e) {
            reply = Future.failedFuture(e);
        }
        return reply.transform(done -> {
            long now = System.nanoTime();
            synchronized (b) {
                b.sending = false;
                b.dueNanos = done.succeeded() ? sentNanos + heartbeatNanos : now + TimeUnit.MILLISECONDS.toNanos(RETRY_MS);
            }
            if (done.failed()) {
                if (done.cause() instanceof io.delayq.store.StoreUnavailableException) {
                    gate.failed(p); // an error reply (a bug, WRONGTYPE) says nothing of Redis being away
                }
                LOG.debugf("lease heartbeat for %s failed, retrying in %d ms: %s", p, RETRY_MS, done.cause().toString());
                return Future.succeededFuture();
            }
            gate.answered(p, sentNanos);
            reportLost(p, leases, done.result().lost());
            endCancelled(p, leases, done.result().cancelled());
            return Future.succeededFuture();
        });
    }

    private void reportLost(Partition p, List<Lease> leases, List<String> lostIds) {
        reported.keySet().removeIf(l -> !isRunning(l)); // bounded by the jobs running here
        if (lostIds.isEmpty()) {
            return;
        }
        Set<String> ids = Set.copyOf(lostIds);
        // A job that finished and was acked since the snapshot has no lease left: not lost. A lost
        // lease whose attempt still runs is extended in vain at every beat: said once.
        List<String> lost = new ArrayList<>();
        for (Lease l : leases) {
            if (ids.contains(l.id()) && isRunning(l) && reported.putIfAbsent(l, Boolean.TRUE) == null
                    && !lost.contains(l.id())) {
                lost.add(l.id());
            }
        }
        if (!lost.isEmpty()) {
            LOG.warnf("lost the lease of %d running job(s) of %s (retaken elsewhere): %s", lost.size(), p, lost);
        }
    }

    private boolean isRunning(Lease l) {
        for (WorkerPool pool : dispatcher.pools()) {
            if (pool.running().containsKey(l)) {
                return true;
            }
        }
        return false;
    }
}
