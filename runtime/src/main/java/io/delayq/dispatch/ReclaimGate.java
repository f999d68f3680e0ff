package io.delayq.dispatch;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.store.Partition;

/**
 * Decides when this replica may reclaim a partition's expired leases. A lease deadline is Redis
 * time, and Redis' clock runs on while nobody can reach it: after a Redis outage longer than the
 * lease (a failover, a restart, a frozen or cut-off master) every lease looks expired, those of
 * replicas that are alive and about to extend them included. Reclaiming them then would run every
 * running job a second time. So a lease counts as abandoned only when its holder has had a whole
 * lease of reachable Redis to extend it and did not: after any sign that the partition's Redis
 * was away — a failed call, a call slow enough that a heartbeat could have missed its lease, or
 * this replica itself frozen (a long GC pause, a stopped VM) — reclaims on that partition wait one
 * lease from the first good answer after it. The holders meanwhile extend their leases at once
 * (the heartbeat retries a failed partition every half second).
 * <p>
 * A replica that was itself cut off or frozen longer than the lease may find its jobs retaken by
 * the others, whose view of Redis was fine: that is the one duplicate the contract allows, and its
 * late ack is refused by the lease token. A killed replica's jobs are retaken as before, within the
 * lease and a poll: nothing was wrong with Redis.
 * <p>
 * Fed by every call of the lease path (the safety-net reads, extends, acks); any thread.
 */
@ApplicationScoped
public class ReclaimGate {
    private static final Logger LOG = Logger.getLogger(ReclaimGate.class);
    private final long leaseNanos;
    private final long slowNanos;
    private final LongSupplier nanos;
    private final Map<Partition, State> states = new ConcurrentHashMap<>();

    /**
     * Whether the partition is in trouble now, and since when (monotonic nanos) its calls are good
     * again. A new state counts as good only from now: a replica that starts during an outage, or
     * just after one, has not seen it, and the holders may not have had their lease yet.
     */
    private static final class State {
        boolean troubled;
        long goodSinceNanos;

        State(long now) {
            this.goodSinceNanos = now;
        }
    }

    @Inject
    public ReclaimGate(DelayqConfig config) {
        this(config.dispatch().lease().toMillis(), config.dispatch().heartbeat().toMillis(), System::nanoTime);
    }

    /**
     * @param leaseMs the lease: how long reclaims wait after an outage
     * @param heartbeatMs the heartbeat: a call slower than half of (lease − heartbeat) is taken for
     *        an outage, since a heartbeat stuck behind it for twice as long would miss its lease
     */
    ReclaimGate(long leaseMs, long heartbeatMs, LongSupplier nanos) {
        this.leaseNanos = leaseMs * 1_000_000;
        this.slowNanos = Math.max(1, (leaseMs - heartbeatMs) / 2) * 1_000_000;
        this.nanos = nanos;
    }

    private State state(Partition p) {
        State s = states.get(p);
        return s != null ? s : states.computeIfAbsent(p, k -> new State(nanos.getAsLong()));
    }

    /** A call on {@code p} failed: Redis (or its node) may be away. */
    void failed(Partition p) {
        State s = state(p);
        synchronized (s) {
            if (!s.troubled) {
                LOG.debugf("reclaims on %s held: a call failed", p);
            }
            s.troubled = true;
        }
    }

    /** A call on {@code p} sent at {@code sentNanos} was answered now. */
    void answered(Partition p, long sentNanos) {
        long now = nanos.getAsLong();
        State s = state(p);
        synchronized (s) {
            if (s.troubled || now - sentNanos > slowNanos) {
                if (s.troubled) {
                    LOG.debugf("%s answers again; reclaims there wait one lease", p);
                }
                s.troubled = false;
                s.goodSinceNanos = now;
            }
        }
    }

    /**
     * This replica was frozen for {@code frozenNanos} (its loops woke that much too late): whatever
     * it read before is old, and the holders it shares Redis with may not have had their turn.
     */
    void frozen(Iterable<Partition> served, long frozenNanos) {
        if (frozenNanos <= slowNanos) {
            return;
        }
        LOG.warnf("this replica was frozen for %d ms (a GC pause, a stopped VM or process); reclaims wait one lease",
                frozenNanos / 1_000_000);
        long now = nanos.getAsLong();
        for (Partition p : served) {
            State s = state(p);
            synchronized (s) {
                s.goodSinceNanos = now;
            }
        }
    }

    /** The pause beyond which a loop that woke late means this replica was frozen. */
    long freezeThresholdNanos() {
        return slowNanos;
    }

    /** Whether this replica may reclaim the expired leases of {@code p} now. */
    boolean open(Partition p) {
        State s = state(p);
        synchronized (s) {
            return !s.troubled && nanos.getAsLong() - s.goodSinceNanos >= leaseNanos;
        }
    }
}
