package io.delayq.dispatch;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.delayq.store.JobStore;
import io.delayq.store.Partition;
import io.quarkus.scheduler.Scheduled;

/**
 * Returns jobs whose lease expired — their replica died or stalled — to their due shard, on
 * every replica for the partitions it serves (no leader). Each run costs one read per partition
 * (the earliest lease deadline); the reclaim script runs only when a lease has expired.
 */
@ApplicationScoped
public class LeaseReclaimer {
    private static final Logger LOG = Logger.getLogger(LeaseReclaimer.class);
    private static final int BATCH = 200;
    private final Dispatcher dispatcher;
    private final JobStore store;
    private final RedisClock clock;
    private final RetryPolicy retry;

    public LeaseReclaimer(Dispatcher dispatcher, JobStore store, RedisClock clock, RetryPolicy retry) {
        this.dispatcher = dispatcher;
        this.store = store;
        this.clock = clock;
        this.retry = retry;
    }

    @Scheduled(every = "${delayq.dispatch.reclaim-interval:10s}", delayed = "1s",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP, skipExecutionIf = Scheduled.ApplicationNotRunning.class)
    void reclaimExpired() {
        for (Partition p : dispatcher.partitions()) {
            try {
                reclaim(p);
            } catch (RuntimeException e) {
                LOG.warnf("reclaim on %s failed: %s", p, e.toString());
            }
        }
    }

    /** Reclaims every expired lease of a partition; returns how many jobs were moved. */
    int reclaim(Partition p) {
        long deadline = store.earliestLeaseDeadline(p);
        if (deadline < 0 || deadline > clock.redisNow()) {
            return 0;
        }
        int moved = 0;
        while (true) {
            int[] r = store.reclaim(p, BATCH, retry.maxAttempts(p.topic()));
            moved += r[0] + r[1];
            if (r[0] + r[1] > 0) {
                LOG.infof("reclaimed %d job(s) of %s with an expired lease (%d to dead)", r[0] + r[1], p, r[1]);
            }
            if (r[0] + r[1] < BATCH) {
                return moved;
            }
        }
    }
}
