package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.store.JobStore;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.store.TakenJob;
import io.quarkus.scheduler.Scheduled;

/**
 * Extends the leases of the jobs running on this replica, so that a long observer keeps its job.
 * A lease that is no longer ours (it expired while Redis was away and another replica retook the
 * job) is logged: that job may now run twice, and the late ack of this attempt will be ignored.
 */
@ApplicationScoped
public class LeaseHeartbeat {
    private static final Logger LOG = Logger.getLogger(LeaseHeartbeat.class);
    private final Dispatcher dispatcher;
    private final JobStore store;
    private final long leaseMs;

    public LeaseHeartbeat(Dispatcher dispatcher, JobStore store, DelayqConfig config) {
        this.dispatcher = dispatcher;
        this.store = store;
        this.leaseMs = config.dispatch().lease().toMillis();
    }

    @Scheduled(every = "${delayq.dispatch.heartbeat:10s}", concurrentExecution = Scheduled.ConcurrentExecution.SKIP,
            skipExecutionIf = Scheduled.ApplicationNotRunning.class)
    void beat() {
        for (WorkerPool pool : dispatcher.pools()) {
            // Every lease, not one per job id: after a lost lease this replica can hold two leases
            // of one id (the stale attempt still running, and the retaken one), and the current
            // one must be extended whatever the map order.
            Map<Partition, List<Lease>> byPartition = new HashMap<>();
            for (TakenJob job : pool.running().values()) {
                byPartition.computeIfAbsent(job.partition(), p -> new ArrayList<>()).add(job.lease());
            }
            byPartition.forEach((p, leases) -> extend(pool, p, leases));
        }
    }

    private void extend(WorkerPool pool, Partition p, List<Lease> leases) {
        try {
            Set<String> lostIds = Set.copyOf(store.extend(p, leaseMs, leases));
            // A job that finished (and was acked) since the snapshot has no lease left: not lost.
            List<String> lost = leases.stream().filter(l -> lostIds.contains(l.id()) && pool.running().containsKey(l))
                    .map(Lease::id).distinct().toList();
            if (!lost.isEmpty()) {
                LOG.warnf("lost the lease of %d running job(s) of %s (retaken elsewhere): %s", lost.size(), p, lost);
            }
        } catch (RuntimeException e) {
            LOG.warnf("lease heartbeat for %s failed: %s", p, e.toString());
        }
    }
}
