package io.delayq.dispatch;

import java.time.Duration;
import java.time.Instant;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.DelayqConfig;
import io.delayq.core.Job;
import io.delayq.core.JobRetry;
import io.delayq.core.JobSnoozedException;
import io.delayq.core.PermanentJobFailureException;
import io.delayq.ops.DelayqMetrics;
import io.delayq.ops.tracing.JobTracing;
import io.delayq.store.FailOutcome;
import io.delayq.store.JobQueue;
import io.delayq.store.JobRecord;
import io.delayq.store.RedisClock;
import io.delayq.store.ResultRetention;
import io.delayq.store.TakenJob;
import io.delayq.store.TopicAdmin;
import io.vertx.core.Context;

/**
 * Runs one attempt on a worker thread (a reactive observer: started there, run on an event loop;
 * an HTTP target: started on the taker's thread, answered on an event loop) and settles it:
 * normal completion → ack (batched by the {@link Acker}); {@link JobSnoozedException} → the
 * snooze script (due again later, the attempt not counted); {@link TopicThrottledException} → the
 * same, and the whole topic held until then on every replica; any other exception → the fail
 * script, which retries with backoff or buries the job ({@link PermanentJobFailureException}: at
 * once). Past its timeout an attempt is ended (a synchronous observer interrupted, a pending
 * CompletionStage cancelled), but a synchronous one is settled only once its observer returns, so
 * that the job is never run again on this replica while it still runs.
 */
@ApplicationScoped
public class JobRunner {
    private static final Logger LOG = Logger.getLogger(JobRunner.class);
    private final TopicRegistry topics;
    private final Acker acker;
    private final JobQueue store;
    private final TopicAdmin flows;
    private final RetryPolicy retry;
    private final DelayqMetrics metrics;
    private final RedisClock clock;
    private final ObjectMapper mapper;
    private final JobTracing tracing;
    private final DelayqConfig config;
    /** Writes the results that topics with a result-retention keep. */
    private final ResultFields results;
    // Ends attempts that run past their timeout: one daemon thread that hands each timed-out
    // attempt to a virtual thread. Cancelled timers leave the queue at once (else every finished
    // job would stay queued for the whole timeout).
    private final ScheduledThreadPoolExecutor timeouts = timeoutExecutor();

    private static ScheduledThreadPoolExecutor timeoutExecutor() {
        ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "delayq-attempt-timeouts");
            t.setDaemon(true);
            return t;
        });
        e.setRemoveOnCancelPolicy(true);
        return e;
    }

    @PreDestroy
    void stopTimeouts() {
        timeouts.shutdownNow();
    }

    public JobRunner(TopicRegistry topics, Acker acker, JobQueue store, TopicAdmin flows, RetryPolicy retry,
            DelayqMetrics metrics, RedisClock clock, ObjectMapper mapper, JobTracing tracing, DelayqConfig config) {
        this.topics = topics;
        this.acker = acker;
        this.store = store;
        this.flows = flows;
        this.retry = retry;
        this.metrics = metrics;
        this.clock = clock;
        this.mapper = mapper;
        this.tracing = tracing;
        this.config = config;
        this.results = new ResultFields(mapper, config.api().maxPayloadBytes());
    }

    /**
     * Whether running the job may block the calling thread: false for a handler that only starts
     * asynchronous work (an HTTP target), which {@link WorkerPool} then runs on the taker's thread.
     */
    boolean blocks(TakenJob taken) {
        JobHandler handler = topics.handlers().get(taken.partition().topic());
        return taken.record() != null && (handler == null || handler.blocking());
    }

    /**
     * How an attempt ended, handed to {@code done}: the error its observer ended with (null: it
     * returned normally; an {@link AttemptTimeoutException} when it ran past its timeout), and
     * how long it ran.
     */
    record Outcome(Throwable error, long tookNanos, String result) {
        /** No outcome of the job's own: it had no record, or never started. */
        static final Outcome NONE = new Outcome(null, -1, null);
    }

    /** The handler is being called (a synchronous observer runs in the call). */
    private static final int CALLING = 0;
    /** The call returned; an asynchronous attempt may still be pending on its CompletionStage. */
    private static final int RETURNED = 1;
    /** The timeout came while the handler was still being called: the observer is overdue. */
    private static final int OVERDUE = 2;

    /**
     * Runs the job; {@code done} is called once the attempt ended and its outcome was recorded (a
     * success: its ack queued, not yet flushed), with that outcome.
     */
    void run(TakenJob taken, BiConsumer<TakenJob, Outcome> done) {
        run(taken, done, c -> {
        });
    }

    /**
     * As {@link #run(TakenJob, BiConsumer)}; {@code onCancel} is handed, before the observer is
     * called, what ends this attempt when its job's cancel reaches this replica (the
     * {@link WorkerPool} keeps it with the attempt; any thread may run it, more than once).
     */
    void run(TakenJob taken, BiConsumer<TakenJob, Outcome> done, Consumer<Runnable> onCancel) {
        String topic = taken.partition().topic();
        if (taken.record() == null) {
            // A lease on an id without a record cannot run; ack drops the lease.
            LOG.warnf("job %s/%s has no record; dropping its lease", topic, taken.lease().id());
            acker.ack(taken.partition(), taken.lease());
            done.accept(taken, Outcome.NONE);
            return;
        }
        JobRecord rec = taken.record();
        int attempt = rec.attempts() + 1;
        long lateness = clock.redisNow() - rec.runAt();
        JobTracing.AttemptSpan span = tracing.startAttempt(topic, taken.lease().id(), attempt, Math.max(0, lateness),
                rec.trace());
        // Set when the job's cancel reaches this attempt: whatever the observer does after that, the
        // attempt settles as cancelled (the fail script then removes the job: see cancel.lua).
        AtomicBoolean cancelled = new AtomicBoolean();
        Job job = new Job(taken.lease().id(), topic, attempt, Instant.ofEpochMilli(rec.runAt()), rec.payloadOrNull(),
                mapper, span.traceparent(), cancelled::get, rec.timeoutMs());
        metrics.dispatched(topic, lateness);
        store.history().started(topic, lateness);
        long start = System.nanoTime();
        // The observer runs with its job in the logging context and its attempt's span current,
        // on whichever thread the handler runs it.
        AttemptContext context = () -> {
            JobTracing.Scope scope = span.makeCurrent();
            JobLogContext log = JobLogContext.of(job);
            return () -> {
                log.close();
                scope.close();
            };
        };
        // The attempt is settled once: by its observer, or by its timeout, whichever comes first.
        AtomicBoolean settled = new AtomicBoolean();
        // Set (under its own lock, with the stage's completion) when an attempt whose cancel ends
        // nothing passed its timeout.
        AtomicBoolean overdueAsync = new AtomicBoolean();
        JobHandler handler = topics.handlers().get(topic);
        boolean blocking = handler.blocking();
        // Interrupted at the timeout: a worker of its own, never the taker's thread.
        Thread caller = Thread.currentThread();
        // The job's own timeout (its enqueue's timeoutMs) in place of the topic's.
        long timeoutMs = rec.timeoutMs() != null ? rec.timeoutMs() : retry.attemptTimeoutMs(topic);
        // Guarded by itself, so that the timeout's interrupt is delivered before the caller learns
        // that it came (and then clears it before its own Redis calls).
        AtomicInteger phase = new AtomicInteger(CALLING);
        AtomicReference<CompletionStage<Void>> running = new AtomicReference<>();
        ScheduledFuture<?> timer = timeouts.schedule(() -> {
            synchronized (phase) {
                if (phase.compareAndSet(CALLING, OVERDUE)) {
                    // A synchronous observer is still running. It is interrupted (blocked in I/O
                    // or a wait, it may give up), but keeps its slot and its lease (the heartbeat
                    // extends what is running) until it returns: were the attempt failed now,
                    // its retry could start here while it still runs. Counted until then.
                    if (blocking) {
                        caller.interrupt();
                    }
                    metrics.overdue(topic, 1);
                    LOG.warnf("job %s/%s attempt %d ran past its timeout of %d ms; thread %s interrupted, its slot and "
                            + "lease kept until the observer returns", topic, job.id(), attempt, timeoutMs, caller.getName());
                    return;
                }
            }
            // The call returned and the attempt waits for its CompletionStage (an asynchronous or
            // reactive observer, an HTTP call): cancelled, it ends now — unless cancelling ends
            // nothing (@ObservesAsync observers run on): then, as a synchronous observer, it keeps
            // its slot and lease until its stage completes, and fails as timed out then.
            if (!handler.cancelEndsWork()) {
                synchronized (overdueAsync) {
                    if (!settled.get() && overdueAsync.compareAndSet(false, true)) {
                        metrics.overdue(topic, 1);
                        LOG.warnf("job %s/%s attempt %d ran past its timeout of %d ms; its asynchronous observers cannot"
                                + " be stopped: slot and lease kept until they end", topic, job.id(), attempt, timeoutMs);
                    }
                }
                return;
            }
            if (settled.compareAndSet(false, true)) {
                CompletionStage<Void> pending = running.get();
                cancel(pending);
                // A stage its cancel completed instead (an HTTP call whose 2xx had come, its body
                // still coming: kept cut) settles with its own outcome: the target ran it.
                Throwable outcome = completedBy(pending, new AttemptTimeoutException(job, timeoutMs));
                // Recording the failure is a Redis call: not on the one timer thread.
                Thread.ofVirtual().name("delayq-timeout").start(
                        () -> settle(taken, job, span, start, outcome, done));
            }
        }, timeoutMs, TimeUnit.MILLISECONDS);
        // A cancel ends the attempt as its timeout does: a synchronous observer still being called is
        // interrupted (under the phase lock, so that no interrupt lands after its call returned); a
        // pending CompletionStage whose cancel ends the work is cancelled (an HTTP call aborted, a
        // reactive subscription cancelled) and the attempt settled now; other stages settle, as
        // cancelled, when they complete.
        Runnable cancelAttempt = () -> {
            if (cancelled.getAndSet(true)) {
                return;
            }
            synchronized (phase) {
                if (phase.get() == CALLING) {
                    if (blocking) {
                        caller.interrupt();
                    }
                    return; // the call returns: the check below ends what it left pending
                }
            }
            endCancelled(handler, settled, running.get(), timer, taken, job, span, start, done);
        };
        onCancel.accept(cancelAttempt);
        CompletionStage<Void> stage = null;
        Throwable thrown = null;
        try {
            stage = handler.handle(job, context);
        } catch (Throwable e) {
            thrown = e;
        }
        running.set(stage);
        boolean overdue;
        synchronized (phase) {
            overdue = !phase.compareAndSet(CALLING, RETURNED);
        }
        if (blocking && cancelled.get()) {
            Thread.interrupted(); // the cancel's interrupt, not to fail the Redis calls below
        }
        if (cancelled.get() && !overdue && thrown == null) {
            endCancelled(handler, settled, stage, timer, taken, job, span, start, done);
        }
        if (overdue) {
            // The observer returned at last, past its timeout: the attempt fails as timed out
            // (whatever it ended with), and only now is its slot freed.
            if (blocking) {
                Thread.interrupted(); // the timeout's interrupt, not to fail the Redis calls below
            }
            cancel(stage);
            metrics.overdue(topic, -1);
            LOG.warnf("job %s/%s attempt %d returned %d ms after its timeout of %d ms (thread %s); failed as timed out",
                    topic, job.id(), attempt, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) - timeoutMs,
                    timeoutMs, caller.getName());
            if (settled.compareAndSet(false, true)) {
                settleWhereItMayBlock(taken, job, span, start, new AttemptTimeoutException(job, timeoutMs), done,
                        !blocking);
            }
            return;
        }
        if (thrown != null) {
            if (settled.compareAndSet(false, true)) {
                timer.cancel(false);
                settleWhereItMayBlock(taken, job, span, start, thrown, done, !blocking);
            }
            return;
        }
        stage.whenComplete((v, e) -> {
            boolean timedOut;
            synchronized (overdueAsync) {
                if (!settled.compareAndSet(false, true)) {
                    return;
                }
                timedOut = overdueAsync.get();
            }
            timer.cancel(false);
            if (timedOut) {
                // Its asynchronous observers ended at last, past the timeout: failed as timed out.
                metrics.overdue(topic, -1);
                settleWhereItMayBlock(taken, job, span, start, new AttemptTimeoutException(job, timeoutMs), done, true);
                return;
            }
            // A reactive observer and an HTTP call complete on an event loop (an HTTP call
            // that completed at once: on the taker's thread), where a success is settled at
            // once (an ack is queued, not sent) but a failure or a snooze, a blocking Redis
            // call, is not recorded.
            settleWhereItMayBlock(taken, job, span, start, e, done, !blocking || Context.isOnEventLoopThread());
        });
    }

    /**
     * Ends a cancelled attempt whose observer's call returned: its pending stage cancelled and the
     * attempt settled as cancelled now when cancelling ends its work; else nothing here (it settles,
     * as cancelled, when its stage completes).
     */
    private void endCancelled(JobHandler handler, AtomicBoolean settled, CompletionStage<Void> stage,
            ScheduledFuture<?> timer, TakenJob taken, Job job, JobTracing.AttemptSpan span, long start,
            BiConsumer<TakenJob, Outcome> done) {
        if (stage == null || !handler.cancelEndsWork() || !settled.compareAndSet(false, true)) {
            return;
        }
        timer.cancel(false);
        cancel(stage);
        // Recording the outcome is a Redis call: not on the thread that brought the cancel.
        Thread.ofVirtual().name("delayq-cancel").start(
                () -> settle(taken, job, span, start, new AttemptCancelledException(job), done));
    }

    /**
     * The outcome of a stage that its cancel completed rather than cancelled (null for a success,
     * else its error), or {@code otherwise} when it was cancelled or is still pending.
     */
    private static Throwable completedBy(CompletionStage<Void> stage, Throwable otherwise) {
        if (stage == null) {
            return otherwise;
        }
        CompletableFuture<Void> f = stage.toCompletableFuture();
        return switch (f.state()) {
            case SUCCESS -> null;
            case FAILED -> f.exceptionNow();
            default -> otherwise;
        };
    }

    /** Cancels what an attempt left pending (an HTTP call in flight is aborted). */
    private static void cancel(CompletionStage<Void> pending) {
        if (pending != null) {
            pending.toCompletableFuture().cancel(true);
        }
    }

    /**
     * Settles on this thread a success (which only queues the ack), and an outcome that needs a
     * Redis call on this thread too unless {@code mustNotBlock} (an event loop, the taker's thread):
     * then on a virtual thread of its own.
     */
    private void settleWhereItMayBlock(TakenJob taken, Job job, JobTracing.AttemptSpan span, long start, Throwable error,
            BiConsumer<TakenJob, Outcome> done, boolean mustNotBlock) {
        // A cancelled attempt's success is recorded as a cancel: a Redis call, as a failure's.
        if ((error == null && !job.cancelled()) || !mustNotBlock) {
            settle(taken, job, span, start, error, done);
        } else {
            Thread.ofVirtual().name("delayq-settle").start(() -> settle(taken, job, span, start, error, done));
        }
    }

    /**
     * Settles a lease of a job that was not run because an earlier attempt of the same job was
     * still running on this replica (see {@link WorkerPool}) with that attempt's outcome: acked
     * after a success, failed with its error, snoozed as it asked. Runs where that attempt was
     * settled (a thread that may block when the outcome needs a Redis call). {@code free} is
     * called at the end, whatever happens.
     */
    void settleAs(TakenJob waiting, Outcome outcome, Consumer<TakenJob> free) {
        try {
            JobRecord rec = waiting.record();
            if (outcome.error() == null || rec == null) {
                // Its run was counted as a success already, by the attempt that ran; its ack keeps
                // that attempt's result.
                acker.ack(waiting.partition(), waiting.lease(), outcome.result());
                return;
            }
            String topic = waiting.partition().topic();
            Job job = new Job(waiting.lease().id(), topic, rec.attempts() + 1, Instant.ofEpochMilli(rec.runAt()),
                    rec.payloadOrNull(), mapper);
            try (JobLogContext log = JobLogContext.of(job)) {
                record(waiting, job, Math.max(0, outcome.tookNanos()), outcome.error());
            }
        } finally {
            free.accept(waiting);
        }
    }

    /** An attempt ended because its job's cancel was asked: the fail script removes the job. */
    public static final class AttemptCancelledException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        AttemptCancelledException(Job job) {
            super("attempt " + job.attempt() + " cancelled", null, false, false);
        }
    }

    /** An attempt that ran past {@code delayq.dispatch.attempt-timeout}. */
    public static final class AttemptTimeoutException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        private final long timeoutMs;

        AttemptTimeoutException(Job job, long timeoutMs) {
            super("attempt " + job.attempt() + " ran past its timeout of " + timeoutMs + " ms", null, false, false);
            this.timeoutMs = timeoutMs;
        }

        /** The timeout the attempt ran past, ms. */
        public long timeoutMs() {
            return timeoutMs;
        }
    }

    /**
     * Ends the span, records the outcome, then frees the slot ({@code done}): in that order, so
     * that a drain that sees every slot free finds every ack queued and every failure recorded;
     * the slot is freed whatever happens before.
     */
    private void settle(TakenJob taken, Job job, JobTracing.AttemptSpan span, long start, Throwable error,
            BiConsumer<TakenJob, Outcome> done) {
        long took = System.nanoTime() - start;
        if (job.cancelled() && !(error instanceof AttemptCancelledException)) {
            // Its cancel reached it: whatever it ended with, it is not run again.
            error = new AttemptCancelledException(job);
        }
        // The job in the logging context for the lines a failure or a snooze logs; a success logs
        // nothing, and settles on an event loop, whose logging context is better left untouched.
        String result = null;
        try (JobLogContext log = error == null ? null : JobLogContext.of(job)) {
            // A snooze is no error, nor is a target's "not now" (429/503 with Retry-After).
            span.end(find(error, JobSnoozedException.class) != null || find(error, TopicThrottledException.class) != null
                    ? null : error);
            result = record(taken, job, took, error);
        } finally {
            done.accept(taken, new Outcome(error, took, result));
        }
    }

    /**
     * The result of a succeeded job as its ack keeps it (see {@link ResultRetention} and
     * {@link ResultFields}); null when its topic keeps none. Never fails: a result that is too
     * large, or not writable as JSON, is dropped and flagged; an HTTP body too large is cut.
     */
    private String resultField(Job job) {
        if (!store.keepsResults(job.topic())) {
            return null;
        }
        ResultFields.Field f = results.of(job, e -> LOG.warnf("result of job %s/%s is not writable as JSON, dropped: %s",
                job.topic(), job.id(), e.toString()));
        if (f.kind() == ResultFields.Kind.DROPPED || f.kind() == ResultFields.Kind.CUT) {
            metrics.resultDropped(job.topic());
        }
        return f.field();
    }

    /** Records the attempt's outcome; returns the result field of a success's ack (null: none). */
    private String record(TakenJob taken, Job job, long took, Throwable error) {
        if (error == null) {
            metrics.succeeded(job.topic(), took);
            store.history().succeeded(job.topic());
            String result = resultField(job);
            acker.ack(taken.partition(), taken.lease(), result);
            return result;
        }
        JobSnoozedException snooze = find(error, JobSnoozedException.class);
        if (snooze != null) {
            snooze(taken, job, took, snooze.delay(), snooze.until(), snooze);
            return null;
        }
        TopicThrottledException throttled = find(error, TopicThrottledException.class);
        if (throttled != null) {
            hold(job, throttled);
            snooze(taken, job, took, throttled.delay(), throttled.until(), throttled);
            return null;
        }
        if (error instanceof AttemptCancelledException) {
            cancelled(taken, job, took, error.getMessage());
            return null;
        }
        PermanentJobFailureException permanent = find(error, PermanentJobFailureException.class);
        Throwable cause = permanent != null ? permanent
                : error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        String text = cause instanceof io.delayq.core.SelfDescribingFailure && cause.getMessage() != null ? cause.getMessage()
                : cause.getClass().getName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
        fail(taken, job, took, text, cause, permanent != null);
        return null;
    }

    /**
     * The first throwable of {@code type} along the causes (CDI and CompletionStages wrap them),
     * and their suppressed ones (ArC reports several failed async observers that way).
     */
    private static <T extends Throwable> T find(Throwable error, Class<T> type) {
        for (int depth = 0; error != null && depth < 16; error = error.getCause(), depth++) {
            if (type.isInstance(error)) {
                return type.cast(error);
            }
            for (Throwable suppressed : error.getSuppressed()) {
                if (type.isInstance(suppressed)) {
                    return type.cast(suppressed);
                }
            }
        }
        return null;
    }

    /**
     * Puts a snoozed job back at the time its observer asked. A time beyond the horizon would
     * be refused at enqueue; here it fails the attempt (with the reason as its error) rather
     * than keep a job that long.
     */
    /** The shortest snooze: one asking for less (or for a time already passed) waits this long. */
    static final long MIN_SNOOZE_MS = 100;

    /** {@code delay} (from Redis now) or {@code until}, the other null, as {@code asked} asked. */
    private void snooze(TakenJob taken, Job job, long took, Duration delay, Instant until, RuntimeException asked) {
        Instant redisNow = Instant.ofEpochMilli(clock.redisNow());
        boolean absolute = until != null;
        boolean beyond = absolute ? until.isAfter(redisNow.plus(config.horizon())) : delay.compareTo(config.horizon()) > 0;
        if (beyond && asked instanceof TopicThrottledException) {
            // A target's "not now" is capped by http.max-retry-after, which the start keeps within
            // the horizon; an HTTP date is capped by this host's clock, so one running ahead of
            // Redis' can still put it a little past: the horizon then, not a failure.
            absolute = false;
            delay = config.horizon();
            beyond = false;
        }
        if (beyond) {
            // Permanent: the observer would ask the same again at every retry.
            fail(taken, job, took, "snooze " + (absolute ? "until " + until : "for " + delay)
                    + " is beyond delayq.horizon (" + config.horizon() + ")", asked, true);
            return;
        }
        // At least MIN_SNOOZE_MS after now: a snooze of 0 (or of a time passed) would run the job
        // again at once, over and over, with no attempt counted.
        long ms;
        if (absolute && until.isBefore(redisNow.plusMillis(MIN_SNOOZE_MS))) {
            absolute = false;
            ms = MIN_SNOOZE_MS;
        } else {
            ms = absolute ? until.toEpochMilli() : Math.max(MIN_SNOOZE_MS, delay.toMillis());
        }
        try {
            boolean abs = absolute;
            OptionalLong runAt = whileRedisAway(job, () -> store.snooze(taken.partition(), taken.lease(), abs, ms));
            if (runAt.isPresent()) {
                metrics.snoozed(job.topic(), took);
            }
            LOG.debugf("%s snoozed until %s", job, runAt.isPresent() ? Instant.ofEpochMilli(runAt.getAsLong()) : "(stale lease)");
        } catch (RuntimeException e) {
            // As for a failure: the lease stays, and when it expires the reclaimer retries the job.
            LOG.warnf("could not record the snooze of %s (%s); it will be retried after its lease expires", job, e.toString());
        }
    }

    /**
     * Holds the job's whole topic until the time its target asked, on every partition (so every
     * replica's takers lease none of its jobs before then), not waiting for Redis: the job's own
     * snooze follows at once either way. A hold that did not reach Redis only means the other
     * jobs of the topic call the target sooner, and are told again.
     */
    private void hold(Job job, TopicThrottledException t) {
        LOG.infof("%s: %s; topic %s held until then", job, t.getMessage(), job.topic());
        boolean absolute = t.until() != null;
        long ms = absolute ? t.until().toEpochMilli() : t.delay().toMillis();
        try {
            flows.hold(job.topic(), absolute, ms).onFailure(e -> LOG.warnf("could not hold topic %s after %s: %s",
                    job.topic(), t.getMessage(), e.toString()));
        } catch (RuntimeException e) {
            LOG.warnf("could not hold topic %s after %s: %s", job.topic(), t.getMessage(), e.toString());
        }
    }

    /** The longest a failure or a snooze is tried again while Redis is away. */
    private static final long RECORD_FOR_NANOS = java.util.concurrent.TimeUnit.MINUTES.toNanos(5);

    /**
     * Records an outcome, trying again while Redis is away (up to {@link #RECORD_FOR_NANOS}): the
     * job keeps its slot and so its lease, which the heartbeat extends, until the outcome is in
     * Redis. Given up at once, the lease would expire and the job come back as a lost attempt —
     * run again sooner than its backoff, and counted as lost instead of failed.
     */
    private <T> T whileRedisAway(Job job, java.util.function.Supplier<T> record) {
        long until = System.nanoTime() + RECORD_FOR_NANOS;
        long pauseMs = 250;
        while (true) {
            try {
                return record.get();
            } catch (io.delayq.store.StoreUnavailableException e) {
                if (System.nanoTime() - until > 0 || Thread.currentThread().isInterrupted()) {
                    throw e;
                }
                LOG.debugf("could not yet record the outcome of %s (%s); trying again in %d ms", job, e.toString(), pauseMs);
                try {
                    Thread.sleep(pauseMs);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
                pauseMs = Math.min(2000, pauseMs * 2);
            }
        }
    }

    /**
     * Ends a cancelled attempt in Redis: the fail script finds the cancel mark on the lease and
     * removes the job (no retry, no dead entry). Without the mark (not seen: a cancel comes from it)
     * it is an ordinary failed attempt, retried: never a death.
     */
    private void cancelled(TakenJob taken, Job job, long took, String text) {
        try {
            long delay = retry.delayMs(job.topic(), job.attempt(), taken.record() == null ? null : taken.record().retry());
            FailOutcome outcome = whileRedisAway(job, () -> store.fail(taken.partition(), taken.lease(), delay, text,
                    retry.maxAttempts(job.topic()), false));
            if (outcome.kind() == FailOutcome.Kind.RETRY || outcome.kind() == FailOutcome.Kind.DEAD) {
                metrics.failed(job.topic(), took, outcome.kind() == FailOutcome.Kind.DEAD);
                store.history().failed(job.topic());
            }
            LOG.infof("%s cancelled: its attempt ended after %d ms (%s)", job, TimeUnit.NANOSECONDS.toMillis(took),
                    outcome.kind());
        } catch (RuntimeException e) {
            // The lease stays; when it expires the reclaimer finds the mark and removes the job.
            LOG.warnf("could not record the cancel of %s (%s); it is removed once its lease expires", job, e.toString());
        }
    }

    /** The most a retry after a timeout waits for a job with its own timeout (see {@link #fail}). */
    static final long MAX_TIMEOUT_BACKOFF_MS = 600_000;

    /** Whether the attempt failed by a timeout: its own, or its HTTP target's call that got no answer in time. */
    private static boolean timedOut(Throwable cause) {
        for (Throwable e = cause; e != null; e = e.getCause()) {
            if (e instanceof AttemptTimeoutException
                    || (e instanceof io.delayq.http.HttpTargetHandler.HttpTargetException h && h.timedOut())) {
                return true;
            }
        }
        return false;
    }

    private void fail(TakenJob taken, Job job, long took, String text, Throwable cause, boolean permanent) {
        try {
            // The job's own backoff when its enqueue gave one (kept in its record, so the same on
            // every replica), else its topic's.
            JobRetry own = taken.record() == null ? null : taken.record().retry();
            long backoff = Math.max(retry.delayMs(job.topic(), job.attempt(), own),
                    topics.handlers().get(job.topic()).minRetryDelayMs(cause));
            // A job with its own timeout that timed out retries within min(timeoutMs, 10 min):
            // its enqueue asked for a short attempt, and its retry should come as soon.
            Long ownTimeout = taken.record() == null ? null : taken.record().timeoutMs();
            long delay = ownTimeout != null && timedOut(cause) ? Math.min(backoff, Math.min(ownTimeout, MAX_TIMEOUT_BACKOFF_MS))
                    : backoff;
            FailOutcome outcome = whileRedisAway(job, () -> store.fail(taken.partition(), taken.lease(), delay, text,
                    retry.maxAttempts(job.topic()), permanent));
            // A job whose cancel was asked meanwhile is gone (the script found the mark): not a failure.
            if (outcome.kind() == FailOutcome.Kind.RETRY || outcome.kind() == FailOutcome.Kind.DEAD) {
                metrics.failed(job.topic(), took, outcome.kind() == FailOutcome.Kind.DEAD);
                store.history().failed(job.topic());
            }
            LOG.debugf("%s failed (%s): %s", job, outcome.kind(), text);
        } catch (RuntimeException e) {
            // The lease stays; when it expires the reclaimer retries the job: nothing is lost.
            LOG.warnf("could not record the failure of %s (%s); it will be retried after its lease expires", job, e.toString());
        }
    }
}
