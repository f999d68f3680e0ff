package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import org.jboss.logging.Logger;

import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.store.RedisClock;
import io.vertx.core.Future;

/**
 * The safety net under the wake-up messages: pub/sub is fire-and-forget (a dropped connection
 * loses messages), so about once a second this loop reads the earliest due time of every served
 * partition — one MGET for all of them on a single Redis, not a take — and wakes the taker of any
 * partition with a job due earlier than its taker planned. The same read gives each partition's
 * earliest lease deadline: a partition with an expired lease (its replica died) is reclaimed at
 * once, so a dead replica's jobs are retaken within lease + a poll however many partitions this
 * replica serves — unless its Redis was away lately ({@link ReclaimGate}). Each pause is the
 * interval +25–75 % (1.25–1.75 s by default, 1.5 s on average): jittered so that replicas started
 * together do not poll together, and long enough on average that the poll (about 0.67 commands/s)
 * and the replica's other periodic work stay under one command per second for an idle replica
 * however many topics it serves (with +0–50 %, the poll alone was 0.8/s).
 * <p>
 * Reads are not awaited: each partition's reply is acted on when it comes, and a partition whose
 * last read has not come back is not read again until it does (on a Redis Cluster, a master that
 * hangs delays nothing but its own partitions, and its reads do not pile up). Every reply also
 * tells the {@link ReclaimGate} whether that partition's Redis answers.
 */
final class SafetyNetPoll {
    private static final Logger LOG = Logger.getLogger(SafetyNetPoll.class);
    private final JobQueue store;
    private final List<DueTaker> takers;
    private final List<Partition> partitions = new ArrayList<>();
    private final AtomicBoolean[] reading;
    private final long intervalMs;
    private final RedisClock clock;
    private final ReclaimGate gate;
    private final Consumer<Partition> reclaim;
    /** Told when reads succeed again after a failed one (the wake-up subscription may be half-open). */
    private volatile Runnable recovered = () -> {
    };
    private final java.util.concurrent.atomic.AtomicBoolean failedLately = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile boolean running;
    private volatile Thread thread;

    /**
     * @param reclaim asked to reclaim a partition whose earliest lease expired; called on a Redis
     *        client thread: it must not block
     */
    SafetyNetPoll(JobQueue store, List<DueTaker> takers, long intervalMs, RedisClock clock, ReclaimGate gate,
            Consumer<Partition> reclaim) {
        this.clock = clock;
        this.gate = gate;
        this.reclaim = reclaim;
        this.store = store;
        this.takers = takers;
        this.intervalMs = intervalMs;
        takers.forEach(t -> partitions.add(t.partition()));
        this.reading = new AtomicBoolean[partitions.size()];
        for (int i = 0; i < reading.length; i++) {
            reading[i] = new AtomicBoolean();
        }
    }

    /** {@code listener} runs (on a Redis client thread; it must not block) when reads succeed again after a failure. */
    void onRecovered(Runnable listener) {
        this.recovered = listener;
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
            long pause = pauseMs(intervalMs, ThreadLocalRandom.current().nextDouble());
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(pause));
            if (!running) {
                return;
            }
            try {
                poll();
            } catch (RuntimeException e) {
                LOG.debugf("safety-net poll failed: %s", e.toString());
            }
        }
    }

    /** The pause before a poll: the interval +25–75 %, by {@code random} in [0, 1). */
    static long pauseMs(long intervalMs, double random) {
        return intervalMs + (long) (intervalMs * (0.25 + 0.5 * random));
    }

    /** Reads every partition whose previous read came back; acts on each reply as it comes. */
    private void poll() {
        List<Integer> idle = new ArrayList<>(partitions.size());
        for (int i = 0; i < partitions.size(); i++) {
            if (reading[i].compareAndSet(false, true)) {
                idle.add(i);
            }
        }
        if (idle.isEmpty()) {
            return;
        }
        List<Partition> asked = new ArrayList<>(idle.size());
        idle.forEach(i -> asked.add(partitions.get(i)));
        long sentNanos = System.nanoTime();
        List<Future<JobQueue.Head>> heads;
        try {
            heads = store.headsAsync(asked);
        } catch (RuntimeException e) {
            idle.forEach(i -> reading[i].set(false));
            throw e;
        }
        for (int k = 0; k < idle.size(); k++) {
            int i = idle.get(k);
            heads.get(k).onComplete(done -> {
                reading[i].set(false);
                Partition p = partitions.get(i);
                if (done.failed()) {
                    if (done.cause() instanceof io.delayq.store.StoreUnavailableException) {
                        gate.failed(p); // an error reply says nothing of Redis being away
                        failedLately.set(true);
                    }
                    LOG.debugf("safety-net read of %s failed: %s", p, done.cause().toString());
                    return;
                }
                gate.answered(p, sentNanos);
                if (failedLately.compareAndSet(true, false)) {
                    recovered.run();
                }
                JobQueue.Head h = done.result();
                // The takers of a paused topic sleep until it is resumed, those of a partition its
                // concurrency cap holds back ("capped": no slot freed since) until a slot frees:
                // waking them would be a take per poll for nothing. Leases are reclaimed either way.
                if (h.next() >= 0 && !h.paused() && !h.capped()) {
                    takers.get(i).wake(h.next());
                }
                if (h.leaseNext() >= 0 && h.leaseNext() <= clock.redisNow() && gate.open(p)) {
                    reclaim.accept(p);
                }
            });
        }
    }
}
