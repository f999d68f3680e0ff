package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import org.jboss.logging.Logger;

import io.delayq.store.JobStore;
import io.delayq.store.Partition;

/**
 * The safety net under the wake-up messages: pub/sub is fire-and-forget (a dropped connection
 * loses messages), so about once a second this loop reads the earliest due time of every served
 * partition — one MGET for all of them, not a take — and wakes the taker of any partition with
 * a job due earlier than its taker planned. The same MGET reads each partition's earliest lease
 * deadline: a partition with an expired lease (its replica died) is reclaimed at once, so a dead
 * replica's jobs are retaken within lease + a poll however many partitions this replica serves. The interval is jittered (+0–50 %) so that replicas
 * started together do not poll together, and so that an idle replica costs Redis less than one
 * command per second however many topics it serves.
 */
final class SafetyNetPoll {
    private static final Logger LOG = Logger.getLogger(SafetyNetPoll.class);
    private final JobStore store;
    private final List<DueTaker> takers;
    private final List<Partition> partitions = new ArrayList<>();
    private final long intervalMs;
    private final RedisClock clock;
    private final Consumer<Partition> reclaim;
    private volatile boolean running;
    private volatile Thread thread;

    SafetyNetPoll(JobStore store, List<DueTaker> takers, long intervalMs, RedisClock clock, Consumer<Partition> reclaim) {
        this.clock = clock;
        this.reclaim = reclaim;
        this.store = store;
        this.takers = takers;
        this.intervalMs = intervalMs;
        takers.forEach(t -> partitions.add(t.partition()));
    }

    void start() {
        if (takers.isEmpty()) {
            return;
        }
        running = true;
        thread = Thread.ofPlatform().name("delayq-safety-net").daemon().start(this::loop);
    }

    void stop() {
        running = false;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    private void loop() {
        while (running) {
            long pause = intervalMs + (long) (intervalMs * 0.5 * ThreadLocalRandom.current().nextDouble());
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(pause));
            if (!running) {
                return;
            }
            try {
                long[][] heads = store.heads(partitions);
                long now = clock.redisNow();
                // Every wake-up first: a reclaim is a script call and must not delay them. The
                // takers of a paused topic sleep until it is resumed: waking them would be a take
                // per poll for nothing. Leases are reclaimed whether paused or not.
                for (int i = 0; i < partitions.size(); i++) {
                    if (heads[0][i] >= 0 && heads[2][i] == 0) {
                        takers.get(i).wake(heads[0][i]);
                    }
                }
                for (int i = 0; i < partitions.size(); i++) {
                    if (heads[1][i] >= 0 && heads[1][i] <= now) {
                        reclaim.accept(partitions.get(i));
                    }
                }
            } catch (RuntimeException e) {
                LOG.debugf("safety-net poll failed: %s", e.toString());
            }
        }
    }
}
