package io.delayq.dispatch;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.jboss.logging.Logger;

import io.delayq.store.Lease;
import io.delayq.store.TakenJob;

/**
 * The worker slots of one topic on this replica. A taker reserves free slots before it takes,
 * so it never leases a job that would wait here: a job waiting in a local queue is a job another
 * replica could be running.
 */
final class WorkerPool {
    private static final Logger LOG = Logger.getLogger(WorkerPool.class);
    private final int concurrency;
    private final Semaphore slots;
    private final Executor executor;
    private final JobRunner runner;
    private final Map<Lease, TakenJob> running = new ConcurrentHashMap<>();
    /** Told whenever slots are freed (the takers waiting for one are driven by events, not threads). */
    private volatile Runnable slotFreed = () -> {
    };

    WorkerPool(int concurrency, Executor executor, JobRunner runner) {
        this.concurrency = concurrency;
        this.slots = new Semaphore(concurrency);
        this.executor = executor;
        this.runner = runner;
    }

    int concurrency() {
        return concurrency;
    }

    /** {@code listener} runs (on the freeing thread; it must not block) whenever slots are freed. */
    void onSlotFreed(Runnable listener) {
        this.slotFreed = listener;
    }

    /** Waits up to {@code timeoutMs} for a free slot; true when one is free (none is taken). */
    boolean awaitFreeSlot(long timeoutMs) throws InterruptedException {
        if (slots.tryAcquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            slots.release();
            return true;
        }
        return false;
    }

    /**
     * Reserves up to {@code max} free slots before a take (several partitions' takers share the
     * pool, so slots are held, not just counted); returns how many, 0 when none is free.
     */
    int reserve(int max) {
        while (true) {
            int n = Math.min(max, slots.availablePermits());
            if (n <= 0) {
                return 0;
            }
            if (slots.tryAcquire(n)) {
                return n;
            }
        }
    }

    /** Gives back reserved slots a take did not fill. */
    void release(int n) {
        if (n > 0) {
            slots.release(n);
            slotFreed.run();
        }
    }

    /**
     * Starts taken jobs, each in one of the slots reserved for the take. A job whose handler does
     * not block (an HTTP target: it only starts the call) is started on this thread: a thread per
     * job would cost more than the call's start itself.
     */
    void start(List<TakenJob> jobs) {
        for (TakenJob job : jobs) {
            running.put(job.lease(), job);
            if (!runner.blocks(job)) {
                try {
                    runner.run(job, this::finished);
                } catch (Throwable e) {
                    // Not the taker's problem, nor the other jobs' of the take (an Error too: the
                    // taker must go on and the slot come back): this one's lease expires and the
                    // job runs again.
                    finished(job);
                    LOG.errorf(e, "could not start job %s", job.lease().id());
                }
                continue;
            }
            try {
                executor.execute(() -> {
                    try {
                        runner.run(job, this::finished);
                    } catch (RuntimeException | Error e) {
                        finished(job);
                        throw e;
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // Workers shut down (a take that ended after the drain gave up waiting for it):
                // the slot comes back; the job's lease expires and it runs again elsewhere.
                finished(job);
                LOG.warnf("job %s not started: the replica is stopping", job.lease().id());
            }
        }
    }

    private void finished(TakenJob job) {
        if (running.remove(job.lease()) != null) {
            slots.release();
            slotFreed.run();
        }
    }

    /** Jobs whose observer has not finished yet (heartbeat and drain). */
    Map<Lease, TakenJob> running() {
        return running;
    }

    /** Waits until every slot is free or the deadline passes; true when all finished. */
    boolean awaitIdle(long deadlineNanos) throws InterruptedException {
        long left = deadlineNanos - System.nanoTime();
        if (slots.tryAcquire(concurrency, Math.max(0, left), TimeUnit.NANOSECONDS)) {
            slots.release(concurrency);
            return true;
        }
        return false;
    }
}
