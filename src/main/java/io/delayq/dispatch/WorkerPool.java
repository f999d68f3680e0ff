package io.delayq.dispatch;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import io.delayq.store.Lease;
import io.delayq.store.TakenJob;

/**
 * The worker slots of one topic on this replica. The taker asks for free slots before it takes,
 * so it never leases a job that would wait here: a job waiting in a local queue is a job another
 * replica could be running.
 */
final class WorkerPool {
    private final String topic;
    private final int concurrency;
    private final Semaphore slots;
    private final Executor executor;
    private final JobRunner runner;
    private final Map<Lease, TakenJob> running = new ConcurrentHashMap<>();

    WorkerPool(String topic, int concurrency, Executor executor, JobRunner runner) {
        this.topic = topic;
        this.concurrency = concurrency;
        this.slots = new Semaphore(concurrency);
        this.executor = executor;
        this.runner = runner;
    }

    String topic() {
        return topic;
    }

    int concurrency() {
        return concurrency;
    }

    int freeSlots() {
        return slots.availablePermits();
    }

    /** Waits up to {@code timeoutMs} for a free slot; true when one is free (none is taken). */
    boolean awaitFreeSlot(long timeoutMs) throws InterruptedException {
        if (slots.tryAcquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            slots.release();
            return true;
        }
        return false;
    }

    /** Starts taken jobs; the caller took no more than {@link #freeSlots()} of them. */
    void start(List<TakenJob> jobs) {
        slots.acquireUninterruptibly(jobs.size());
        for (TakenJob job : jobs) {
            running.put(job.lease(), job);
            executor.execute(() -> {
                try {
                    runner.run(job, this::finished);
                } catch (RuntimeException | Error e) {
                    finished(job);
                    throw e;
                }
            });
        }
    }

    private void finished(TakenJob job) {
        if (running.remove(job.lease()) != null) {
            slots.release();
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
