package io.delayq.dispatch;

import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.jboss.logging.Logger;

import io.delayq.store.JobStore;
import io.delayq.store.Partition;
import io.delayq.store.RedisReplyException;
import io.delayq.store.TakeResult;

/**
 * Takes the due jobs of one topic partition, on its own thread. It sleeps until the earliest due
 * time it knows, and takes then; {@link #wake(long)} (a wake-up message: an earlier job was
 * enqueued on some replica) cuts the sleep short. Pub/sub is fire-and-forget, so a sleeping
 * taker also polls at the safety-net interval — one GET of the partition's "next" key, not a
 * take — and the interval is jittered so that replicas started together do not poll together.
 */
final class DueTaker {
    private static final Logger LOG = Logger.getLogger(DueTaker.class);
    private static final long NONE = Long.MAX_VALUE;

    private final Partition partition;
    private final WorkerPool pool;
    private final JobStore store;
    private final RedisClock clock;
    private final String replicaId;
    private final int maxBatch;
    private final long leaseMs;
    private final long safetyNetMs;
    private final AtomicLong calls = new AtomicLong();
    private final Set<Integer> olderDays = new TreeSet<>();

    private volatile boolean running;
    private volatile Thread thread;
    /** Earliest Redis-time due the taker must wake for; lowered by wake-ups. */
    private final AtomicLong wakeFor = new AtomicLong(NONE);
    private volatile long lastProgressNanos = System.nanoTime();
    private volatile long takes;

    DueTaker(Partition partition, WorkerPool pool, JobStore store, RedisClock clock, String replicaId, int maxBatch,
            long leaseMs, long safetyNetMs) {
        this.partition = partition;
        this.pool = pool;
        this.store = store;
        this.clock = clock;
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

    /** Stops taking; a take in progress finishes (its jobs are started) before the thread ends. */
    void stop() throws InterruptedException {
        running = false;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
            t.join(10_000);
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

    /** Nanos since the loop last made progress (for the liveness check). */
    long stalledNanos() {
        return running ? System.nanoTime() - lastProgressNanos : 0;
    }

    boolean isRunning() {
        return running && thread != null && thread.isAlive();
    }

    long takes() {
        return takes;
    }

    private void loop() {
        long failures = 0;
        while (running) {
            lastProgressNanos = System.nanoTime();
            try {
                int free = pool.freeSlots();
                if (free == 0) {
                    pool.awaitFreeSlot(safetyNetMs);
                    continue;
                }
                int want = Math.min(free, maxBatch);
                wakeFor.set(NONE);
                long before = System.currentTimeMillis();
                TakeResult r = store.take(partition, want, leaseMs, replicaId + ":" + calls.incrementAndGet() + ":",
                        olderDays);
                clock.observe(r.now(), before, System.currentTimeMillis());
                takes++;
                failures = 0;
                if (!r.jobs().isEmpty()) {
                    pool.start(r.jobs());
                }
                if (r.jobs().size() == want) {
                    continue; // there may be more due right now
                }
                sleepUntil(r.nextDue() < 0 ? NONE : r.nextDue());
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
     * Sleeps until the Redis-time instant {@code nextDue}, a wake-up for an earlier job, or the
     * safety-net poll, whichever comes first. A poll that finds nothing due earlier goes back to
     * sleep without taking.
     */
    private void sleepUntil(long nextDue) {
        long due = nextDue;
        while (running) {
            long woken = wakeFor.get();
            long target = Math.min(due, woken);
            long now = clock.redisNow();
            if (target <= now) {
                return;
            }
            long poll = safetyNetMs + (long) (safetyNetMs * 0.4 * ThreadLocalRandom.current().nextDouble());
            long sleepMs = Math.min(target - now, poll);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(sleepMs) - 100_000);
            lastProgressNanos = System.nanoTime();
            if (!running || wakeFor.get() < target) {
                continue; // stopping, or a wake-up lowered the target: re-evaluate
            }
            long after = clock.redisNow();
            if (after + 1 >= target) {
                spinUntil(target);
                return;
            }
            if (sleepMs == poll) {
                // Safety net: one cheap read of the partition's earliest due time.
                long head = store.nextDue(java.util.List.of(partition))[0];
                due = head < 0 ? NONE : head;
            }
        }
    }

    /** The last sub-millisecond: parkNanos overshoots by ~50-100 µs, so park short and check. */
    private void spinUntil(long targetRedisMs) {
        while (running && clock.redisNow() < targetRedisMs) {
            LockSupport.parkNanos(50_000);
        }
    }

    private void pause(long failures) {
        long ms = Math.min(safetyNetMs, 50L << Math.min(failures, 6));
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(ms));
    }
}
