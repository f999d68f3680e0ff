package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.jboss.logging.Logger;

import io.delayq.ops.DelayqMetrics;
import io.delayq.store.JobStore;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.store.RedisReplyException;
import io.delayq.store.StoreUnavailableException;
import io.delayq.store.TakeResult;

/**
 * Takes the due jobs of one topic partition, on its own thread. It sleeps until the earliest due
 * time it knows, and takes then; {@link #wake(long)} (a wake-up message: an earlier job was
 * enqueued on some replica) cuts the sleep short. Pub/sub is fire-and-forget, so the replica's
 * {@link SafetyNetPoll} also reads every partition's earliest due time about once a second and
 * wakes a taker that missed a message.
 */
final class DueTaker {
    private static final Logger LOG = Logger.getLogger(DueTaker.class);
    private static final long NONE = Long.MAX_VALUE;

    private final Partition partition;
    private final WorkerPool pool;
    private final JobStore store;
    /** The replica's Redis clock (lateness, the safety net), fed by every taker. */
    private final RedisClock clock;
    /**
     * This partition's own: on a Redis Cluster each master has its own TIME, and the take's
     * deadline and the sleep until the next due job must be in the time of the master that runs them.
     */
    private final RedisClock partitionClock;
    private final Acker acker;
    private final DelayqMetrics metrics;
    private final String replicaId;
    private final int maxBatch;
    private final long leaseMs;
    private final long safetyNetMs;
    private final long minGapMs;
    private final long takeDeadlineMs;
    private final AtomicLong calls = new AtomicLong();
    private final Set<Integer> olderDays = new TreeSet<>();
    /** Token prefixes of takes whose outcome is unknown (failed without a reply); taker thread only. */
    private final List<String> uncertain = new ArrayList<>();
    private static final int MAX_UNCERTAIN = 1000;

    private volatile boolean running;
    private volatile Thread thread;
    /** Earliest Redis-time due the taker must wake for; lowered by wake-ups. */
    private final AtomicLong wakeFor = new AtomicLong(NONE);
    private volatile long lastProgressNanos = System.nanoTime();

    DueTaker(Partition partition, WorkerPool pool, JobStore store, RedisClock clock, Acker acker,
            DelayqMetrics metrics,
            String replicaId, int maxBatch, long leaseMs, long safetyNetMs, long minGapMs, long redisTimeoutMs) {
        this.minGapMs = minGapMs;
        this.takeDeadlineMs = redisTimeoutMs / 2;
        this.acker = acker;
        this.metrics = metrics;
        this.partition = partition;
        this.pool = pool;
        this.store = store;
        this.clock = clock;
        this.partitionClock = new RedisClock(clock::monotonicNanos);
        this.replicaId = replicaId;
        this.maxBatch = maxBatch;
        this.leaseMs = leaseMs;
        this.safetyNetMs = safetyNetMs;
    }

    Partition partition() {
        return partition;
    }

    void start() {
        running = true;
        thread = Thread.ofPlatform().name("delayq-taker-" + partition).daemon().start(this::loop);
    }

    /**
     * Stops taking; a take in progress finishes (its jobs are started) before the thread ends.
     * Jobs of takes whose reply was lost are put back now if Redis answers.
     */
    void stop() throws InterruptedException {
        running = false;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
            t.join(10_000);
            if (!t.isAlive() && !uncertain.isEmpty()) {
                releaseUncertain();
            }
        }
    }

    /** A job due at {@code dueRedisMs} was scheduled: wake up if that is earlier than planned. */
    void wake(long dueRedisMs) {
        long current;
        do {
            current = wakeFor.get();
            if (dueRedisMs >= current) {
                return;
            }
        } while (!wakeFor.compareAndSet(current, dueRedisMs));
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /** Puts back the jobs of takes whose reply was lost; kept for the next take if Redis fails again. */
    private void releaseUncertain() {
        try {
            int back = store.releaseTakes(partition, uncertain);
            if (back > 0) {
                LOG.infof("put back %d job(s) of %d take(s) on %s whose reply was lost", back, uncertain.size(), partition);
            }
            uncertain.clear();
        } catch (RuntimeException e) {
            LOG.debugf("could not yet put back the jobs of takes on %s whose reply was lost: %s", partition, e.toString());
        }
    }

    /** Nanos since the loop last made progress (for the liveness check). */
    long stalledNanos() {
        return running ? System.nanoTime() - lastProgressNanos : 0;
    }

    boolean isRunning() {
        return running && thread != null && thread.isAlive();
    }

    private void loop() {
        long failures = 0;
        while (running) {
            lastProgressNanos = System.nanoTime();
            try {
                int want = pool.reserve(maxBatch);
                if (want == 0) {
                    pool.awaitFreeSlot(safetyNetMs);
                    continue;
                }
                wakeFor.set(NONE);
                long t0 = clock.monotonicNanos();
                List<Lease> acks = acker.drain(partition, 1000);
                TakeResult r;
                String tokenPrefix = replicaId + ":" + calls.incrementAndGet() + ":";
                try {
                    // A take that Redis runs after this deadline (its reply would find nobody
                    // waiting for it) leases nothing: half the Redis timeout, in Redis time.
                    r = store.take(partition, want, leaseMs, tokenPrefix, olderDays, acks,
                            partitionClock.redisNow() + takeDeadlineMs);
                } catch (RuntimeException e) {
                    acker.restore(partition, acks);
                    pool.release(want);
                    if (e instanceof StoreUnavailableException && uncertain.size() < MAX_UNCERTAIN) {
                        // Redis may have run it and the reply was lost (connection closed, Redis
                        // killed after the write): its jobs would be leased to nobody until the
                        // lease expires, an attempt lost. Put them back once Redis answers. (Past
                        // the bound, a long outage's takes are left to the lease expiry.)
                        uncertain.add(tokenPrefix);
                    }
                    throw e;
                }
                pool.release(want - r.jobs().size());
                long t1 = clock.monotonicNanos();
                metrics.took(partition.topic(), t1 - t0);
                Acker.reportStale(partition, r.staleAcks());
                clock.observe(r.now(), t0, t1);
                partitionClock.observe(r.now(), t0, t1);
                failures = 0;
                if (!r.jobs().isEmpty()) {
                    pool.start(r.jobs());
                }
                if (!uncertain.isEmpty()) {
                    releaseUncertain();
                }
                if (r.paused()) {
                    // Nothing is taken until the topic is resumed, which publishes a wake-up (the
                    // safety-net poll stands in for a lost one): no take before, however many are due.
                    sleepUntil(NONE);
                    continue;
                }
                if (r.jobs().size() == want && r.notBefore() == 0) {
                    continue; // there may be more due right now
                }
                // Under a steady stream the next job is due within this take's round trip, and a
                // take right away would find only the one or two jobs that fell due meanwhile.
                // Waiting until minGap after this take's start batches them: each take and ack
                // costs Redis the same whether it moves one job or fifty, for <= minGap lateness.
                // A rate limit that held the take back says when it lets the next jobs go.
                long next = r.nextDue() < 0 ? NONE
                        : Math.max(Math.max(r.nextDue(), r.notBefore()), r.now() + minGapMs);
                sleepUntil(next);
            } catch (RedisReplyException e) {
                LOG.errorf(e, "take on %s failed", partition);
                pause(++failures);
            } catch (RuntimeException e) {
                if (failures++ == 0) {
                    LOG.warnf("take on %s failed, retrying: %s", partition, e.toString());
                }
                pause(failures);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /**
     * Sleeps until the Redis-time instant {@code nextDue}, or until a wake-up asks for an earlier
     * time (a wake-up message, or the {@link SafetyNetPoll} finding an earlier job). The sleep is
     * cut into safety-net-sized pieces only to show liveness; those cost Redis nothing.
     */
    private void sleepUntil(long nextDue) {
        while (running) {
            long target = Math.min(nextDue, wakeFor.get());
            long now = partitionClock.redisNow();
            if (target <= now) {
                return;
            }
            long sleepMs = Math.min(target - now, safetyNetMs);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(sleepMs) - 100_000);
            lastProgressNanos = System.nanoTime();
            if (running && wakeFor.get() >= target && partitionClock.redisNow() + 1 >= target) {
                spinUntil(target);
                return;
            }
        }
    }

    /** The last sub-millisecond: parkNanos overshoots by ~50-100 µs, so park short and check. */
    private void spinUntil(long targetRedisMs) {
        while (running && partitionClock.redisNow() < targetRedisMs) {
            LockSupport.parkNanos(50_000);
        }
    }

    private void pause(long failures) {
        long ms = Math.min(safetyNetMs, 50L << Math.min(failures, 6));
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(ms));
    }
}
