package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.jboss.logging.Logger;

import io.delayq.store.Lease;
import io.delayq.store.Partition;
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
    /** The job ids whose observer runs here, each with the later leases of it that wait for that run. */
    private final Map<JobKey, Attempt> attempts = new ConcurrentHashMap<>();

    private record JobKey(Partition partition, String id) {
        static JobKey of(TakenJob job) {
            return new JobKey(job.partition(), job.lease().id());
        }
    }

    /** An attempt whose observer runs here; {@code waiting} is only touched inside the map's compute. */
    private static final class Attempt {
        final Lease lease;
        final List<TakenJob> waiting = new ArrayList<>();
        /** What ends the attempt (from {@link JobRunner}); null until the runner handed it over. */
        Runnable canceller;
        /** Its job's cancel reached this replica (before the runner handed the canceller over, too). */
        boolean cancelAsked;

        Attempt(Lease lease) {
            this.lease = lease;
        }

        /** Whether the lease with {@code token} is this attempt's, or one waiting for it (the job's current one). */
        boolean holds(String token) {
            if (lease.token().equals(token)) {
                return true;
            }
            for (TakenJob w : waiting) {
                if (w.lease().token().equals(token)) {
                    return true;
                }
            }
            return false;
        }
    }
    /** Told whenever slots are freed (the takers waiting for one are driven by events, not threads). */
    private volatile Runnable slotFreed = () -> {
    };

    /** Told of the partition of every job that ended here (its taker may wait for the topic's concurrency cap). */
    private volatile java.util.function.Consumer<Partition> jobFinished = p -> {
    };

    /** {@code listener} runs (on the freeing thread; it must not block) with the partition of every job that ended. */
    void onJobFinished(java.util.function.Consumer<Partition> listener) {
        this.jobFinished = listener;
    }

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
            if (job.record() != null && waitsForRunningAttempt(job)) {
                continue;
            }
            if (!runner.blocks(job)) {
                try {
                    runner.run(job, this::finished, c -> cancellable(job, c));
                } catch (Throwable e) {
                    // Not the taker's problem, nor the other jobs' of the take (an Error too: the
                    // taker must go on and the slot come back): this one's lease expires and the
                    // job runs again.
                    finished(job, JobRunner.Outcome.NONE);
                    LOG.errorf(e, "could not start job %s", job.lease().id());
                }
                continue;
            }
            try {
                executor.execute(() -> {
                    try {
                        runner.run(job, this::finished, c -> cancellable(job, c));
                    } catch (RuntimeException | Error e) {
                        finished(job, JobRunner.Outcome.NONE);
                        throw e;
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // Workers shut down (a take that ended after the drain gave up waiting for it):
                // the slot comes back; the job's lease expires and it runs again elsewhere.
                finished(job, JobRunner.Outcome.NONE);
                LOG.warnf("job %s not started: the replica is stopping", job.lease().id());
            }
        }
    }

    /** Keeps what ends a job's attempt; runs it at once when the job's cancel came first. */
    private void cancellable(TakenJob job, Runnable canceller) {
        boolean[] now = { false };
        attempts.computeIfPresent(JobKey.of(job), (k, a) -> {
            if (a.lease.equals(job.lease())) {
                a.canceller = canceller;
                now[0] = a.cancelAsked;
            }
            return a;
        });
        if (now[0]) {
            canceller.run();
        }
    }

    /**
     * The job's cancel reached this replica (a wake-up message, or the heartbeat read its mark): ends
     * its attempt here, when one runs under the lease with {@code token} (or its current lease waits
     * for it). Returns whether one does. Any thread; a second call changes nothing.
     */
    boolean cancel(Partition partition, String id, String token) {
        Runnable[] run = { null };
        boolean[] found = { false };
        attempts.computeIfPresent(new JobKey(partition, id), (k, a) -> {
            if (a.holds(token)) {
                found[0] = true;
                if (!a.cancelAsked) {
                    a.cancelAsked = true;
                    run[0] = a.canceller;
                }
            }
            return a;
        });
        if (run[0] != null) {
            run[0].run();
        }
        return found[0];
    }

    /** Whether an attempt of this job (under any lease) runs here now. */
    boolean runsHere(TakenJob job) {
        return attempts.containsKey(JobKey.of(job));
    }

    /**
     * Whether an attempt of this job already runs here, under an older lease: then the new lease
     * waits for it, in {@link #running()} so that the heartbeat extends it, and is settled with
     * that attempt's outcome when it ends, instead of running the observer again. That happens
     * when the older lease expired while this replica was frozen or cut off from Redis and this
     * replica took the job again: the job already runs here, and a second run beside it is the
     * duplicate the contract forbids (its stale outcome is refused by the lease token, hence the
     * new lease takes it over).
     */
    private boolean waitsForRunningAttempt(TakenJob job) {
        boolean[] waits = { false };
        attempts.compute(JobKey.of(job), (k, a) -> {
            if (a == null) {
                return new Attempt(job.lease());
            }
            a.waiting.add(job);
            waits[0] = true;
            return a;
        });
        if (waits[0]) {
            LOG.warnf("job %s/%s taken again (lease %s) while its attempt under an earlier lease still runs here: not run "
                    + "again; settled with that attempt's outcome when it ends", job.partition().topic(), job.lease().id(),
                    job.lease().token());
        }
        return waits[0];
    }

    /** An attempt ended ({@code outcome}: {@link JobRunner.Outcome#NONE} when it never ran). */
    private void finished(TakenJob job, JobRunner.Outcome outcome) {
        Attempt[] ended = { null };
        attempts.computeIfPresent(JobKey.of(job), (k, a) -> {
            if (!a.lease.equals(job.lease())) {
                return a;
            }
            ended[0] = a;
            return null;
        });
        free(job);
        if (ended[0] == null) {
            return;
        }
        for (TakenJob waiting : ended[0].waiting) {
            if (outcome == JobRunner.Outcome.NONE) {
                free(waiting); // as the attempt itself: its lease expires and the job runs again
                continue;
            }
            try {
                runner.settleAs(waiting, outcome, this::free);
            } catch (RuntimeException e) {
                free(waiting);
                LOG.warnf("could not settle job %s/%s (lease %s) with the outcome of its earlier attempt: %s",
                        waiting.partition().topic(), waiting.lease().id(), waiting.lease().token(), e.toString());
            }
        }
    }

    private void free(TakenJob job) {
        if (running.remove(job.lease()) != null) {
            slots.release();
            slotFreed.run();
            jobFinished.accept(job.partition());
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
