package io.delayq.dispatch;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.delayq.ops.DelayqMetrics;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.store.RedisClock;
import io.quarkus.scheduler.Scheduled;

/**
 * Returns jobs whose lease expired — their replica died or stalled — to their due shard, on
 * every replica for the partitions it serves (no leader). The safety-net poll finds a partition
 * with an expired lease within a poll ({@link #reclaimExpired}); this periodic look is the
 * backstop under it. Each run reads the earliest lease deadline of one partition, in turn, so that an idle replica costs Redis one command per
 * interval however many topics it serves; the reclaim script runs only when a lease has
 * expired, and then the next partition is looked at at once (a dead replica usually held jobs
 * of several). With several replicas serving a partition it is looked at that much more often.
 * <p>
 * Nothing is reclaimed on a partition whose Redis was away lately, until its holders have had a
 * lease to extend their leases ({@link ReclaimGate}): an outage longer than the lease must not
 * hand running jobs to a second replica.
 */
@ApplicationScoped
public class LeaseReclaimer {
    private static final Logger LOG = Logger.getLogger(LeaseReclaimer.class);
    private static final int BATCH = 200;
    private final Dispatcher dispatcher;
    private final JobQueue store;
    private final RedisClock clock;
    private final RetryPolicy retry;
    private final DelayqMetrics metrics;
    private final ReclaimGate gate;
    /** How long after it is sent a reclaim may still act (Redis time): half the Redis timeout, as a take. */
    private final long deadlineMs;
    /** Partitions with a reclaim running now (at most one each; different partitions' run side by side). */
    private final java.util.Set<Partition> reclaiming = java.util.concurrent.ConcurrentHashMap.newKeySet();
    // Replicas start their rotation at different partitions, so together they cover more.
    private int next = java.util.concurrent.ThreadLocalRandom.current().nextInt(1 << 16);

    public LeaseReclaimer(Dispatcher dispatcher, JobQueue store, RedisClock clock, RetryPolicy retry,
            DelayqMetrics metrics, ReclaimGate gate, io.delayq.core.DelayqConfig config) {
        this.gate = gate;
        this.deadlineMs = config.redisTimeout().toMillis() / 2;
        this.dispatcher = dispatcher;
        this.store = store;
        this.clock = clock;
        this.retry = retry;
        this.metrics = metrics;
    }

    @Scheduled(every = "${delayq.dispatch.reclaim-interval:60s}", delayed = "1s",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP, skipExecutionIf = Scheduled.ApplicationNotRunning.class)
    void lookForExpiredLeases() {
        java.util.List<Partition> all = dispatcher.partitions();
        for (int looked = 0; looked < all.size(); looked++) {
            Partition p = all.get(Math.floorMod(next++, all.size()));
            try {
                if (reclaim(p) == 0) {
                    return;
                }
            } catch (RuntimeException e) {
                LOG.warnf("reclaim on %s failed: %s", p, e.toString());
                return;
            }
        }
    }

    /** Reclaims every expired lease of a partition; returns how many jobs were moved. */
    int reclaim(Partition p) {
        if (!gate.open(p)) {
            return 0;
        }
        long deadline = store.earliestLeaseDeadline(p);
        if (deadline < 0 || deadline > clock.redisNow()) {
            return 0;
        }
        return reclaimExpired(p);
    }

    /**
     * Reclaims a partition the safety-net poll found with an expired lease bound, on a virtual
     * thread of its own (the poll's reply comes on a Redis client thread, which must not block),
     * unless a reclaim of that partition is running already. Any thread.
     */
    void reclaimSoon(Partition p) {
        if (!reclaiming.add(p)) {
            return;
        }
        try {
            Thread.ofVirtual().name("delayq-reclaim").start(() -> {
                try {
                    reclaimExpired(p);
                } finally {
                    reclaiming.remove(p);
                }
            });
        } catch (RuntimeException | Error e) {
            reclaiming.remove(p);
            throw e;
        }
    }

    /**
     * Runs the reclaim script on a partition with an expired lease bound (no pre-check: the
     * script also corrects the bound when the lease was extended), while the gate is open.
     */
    int reclaimExpired(Partition p) {
        int moved = 0;
        try {
            while (gate.open(p)) {
                RetryPolicy.Backoff b = retry.backoff(p.topic());
                // A reclaim Redis runs late (a write pause, a hung master) must not act: the holders'
                // extends may be queued behind it. No deadline before Redis' clock is known here.
                long deadline = clock.sampled() ? clock.redisNow() + deadlineMs : 0;
                int[] r = store.reclaim(p, BATCH, retry.maxAttempts(p.topic()), retry.maxLostAttempts(),
                        dispatcher.heldTokens(p), deadline, b.initialMs(), b.multiplier(), b.maxMs(), b.jitter());
                moved += r[0] + r[1];
                metrics.lost(p.topic(), r[0], r[1]);
                if (r[0] + r[1] > 0) {
                    LOG.infof("reclaimed %d job(s) of %s with an expired lease (%d to dead)", r[0] + r[1], p, r[1]);
                }
                if (r[2] > 0) {
                    LOG.infof("removed %d cancelled job(s) of %s whose holder is gone (lease expired)", r[2], p);
                }
                if (r[0] + r[1] + r[2] < BATCH) {
                    return moved;
                }
            }
            return moved;
        } catch (RuntimeException e) {
            if (e instanceof io.delayq.store.StoreUnavailableException) {
                gate.failed(p);
            }
            LOG.warnf("reclaim on %s failed: %s", p, e.toString());
            return moved;
        }
    }
}
