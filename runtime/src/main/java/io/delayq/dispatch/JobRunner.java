package io.delayq.dispatch;

import java.time.Instant;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.Job;
import io.delayq.ops.DelayqMetrics;
import io.delayq.ops.tracing.JobTracing;
import io.delayq.store.FailOutcome;
import io.delayq.store.JobRecord;
import io.delayq.store.JobStore;
import io.delayq.store.TakenJob;

/**
 * Runs one attempt on a worker thread and settles it: normal completion → ack (batched by the
 * {@link Acker}); an exception → the fail script, which retries with backoff or buries the job.
 */
@ApplicationScoped
public class JobRunner {
    private static final Logger LOG = Logger.getLogger(JobRunner.class);
    private final TopicRegistry topics;
    private final Acker acker;
    private final JobStore store;
    private final RetryPolicy retry;
    private final DelayqMetrics metrics;
    private final RedisClock clock;
    private final ObjectMapper mapper;
    private final JobTracing tracing;

    public JobRunner(TopicRegistry topics, Acker acker, JobStore store, RetryPolicy retry, DelayqMetrics metrics,
            RedisClock clock, ObjectMapper mapper, JobTracing tracing) {
        this.topics = topics;
        this.acker = acker;
        this.store = store;
        this.retry = retry;
        this.metrics = metrics;
        this.clock = clock;
        this.mapper = mapper;
        this.tracing = tracing;
    }

    /** Runs the job; {@code done} is called once the observer finished (before the ack is flushed). */
    void run(TakenJob taken, Consumer<TakenJob> done) {
        String topic = taken.partition().topic();
        if (taken.record() == null) {
            // A lease on an id without a record cannot run; ack drops the lease.
            LOG.warnf("job %s/%s has no record; dropping its lease", topic, taken.lease().id());
            acker.ack(taken.partition(), taken.lease());
            done.accept(taken);
            return;
        }
        JobRecord rec = taken.record();
        int attempt = rec.attempts() + 1;
        long lateness = clock.redisNow() - rec.runAt();
        JobTracing.AttemptSpan span = tracing.startAttempt(topic, taken.lease().id(), attempt, Math.max(0, lateness),
                rec.trace());
        Job job = new Job(taken.lease().id(), topic, attempt, Instant.ofEpochMilli(rec.runAt()), rec.payloadOrNull(),
                mapper, span.traceparent());
        metrics.dispatched(topic, lateness);
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
        CompletionStage<Void> stage;
        try {
            stage = topics.handlers().get(topic).handle(job, context);
        } catch (Throwable e) {
            settle(taken, job, span, start, e, done);
            return;
        }
        stage.whenComplete((v, e) -> settle(taken, job, span, start, e, done));
    }

    /**
     * Ends the span, records the outcome, then frees the slot ({@code done}): in that order, so
     * that a drain that sees every slot free finds every ack queued and every failure recorded;
     * the slot is freed whatever happens before.
     */
    private void settle(TakenJob taken, Job job, JobTracing.AttemptSpan span, long start, Throwable error,
            Consumer<TakenJob> done) {
        try (JobLogContext log = JobLogContext.of(job)) {
            span.end(error);
            record(taken, job, System.nanoTime() - start, error);
        } finally {
            done.accept(taken);
        }
    }

    private void record(TakenJob taken, Job job, long took, Throwable error) {
        if (error == null) {
            metrics.succeeded(job.topic(), took);
            acker.ack(taken.partition(), taken.lease());
            return;
        }
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        String text = cause.getClass().getName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
        try {
            FailOutcome outcome = store.fail(taken.partition(), taken.lease(), retry.delayMs(job.topic(), job.attempt()),
                    text, retry.maxAttempts(job.topic()));
            if (outcome.kind() != FailOutcome.Kind.STALE) {
                metrics.failed(job.topic(), took, outcome.kind() == FailOutcome.Kind.DEAD);
            }
            LOG.debugf("%s failed (%s): %s", job, outcome.kind(), text);
        } catch (RuntimeException e) {
            // The lease stays; when it expires the reclaimer retries the job: nothing is lost.
            LOG.warnf("could not record the failure of %s (%s); it will be retried after its lease expires", job, e.toString());
        }
    }
}
