package io.delayq.core;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.ops.DelayqMetrics;
import io.delayq.ops.tracing.JobTracing;
import io.delayq.store.EnqueueOutcome;
import io.delayq.store.Inspection;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.store.StoreUnavailableException;
import io.vertx.core.Future;

/**
 * Schedules jobs from Java code in the same application:
 * {@code jobs.schedule("order-close", payload, Duration.ofMinutes(30))}. The job is in Redis when
 * the call returns. Scheduling an id that exists returns the existing job (idempotent); on a
 * topic with a dedup window, so does an id that succeeded within it ({@link JobState#SUCCEEDED},
 * with {@link JobInfo#finishedAt()}): it does not run again. A request with
 * {@link JobRequest#ifExists(IfExists)} replace or extend changes a scheduled job instead.
 *
 * @throws InvalidJobException on a rule broken (names the field)
 * @throws io.delayq.store.StoreUnavailableException when Redis cannot be reached (nothing written)
 * @see ReactiveJobs the same, returning {@code Uni}s, for code on an event loop
 */
@ApplicationScoped
public class Jobs {
    private final JobQueue store;
    private final Inspection inspection;
    private final JobValidator validator;
    private final ObjectMapper mapper;
    private final DelayqMetrics metrics;
    private final JobTracing tracing;

    public Jobs(JobQueue store, Inspection inspection, JobValidator validator, ObjectMapper mapper, DelayqMetrics metrics,
            JobTracing tracing) {
        this.store = store;
        this.inspection = inspection;
        this.validator = validator;
        this.mapper = mapper;
        this.metrics = metrics;
        this.tracing = tracing;
    }

    /** Schedules {@code payload} on {@code topic} to run after {@code delay}, under a generated id. */
    public JobInfo schedule(String topic, Object payload, Duration delay) {
        return schedule(JobRequest.topic(topic).payload(payload).delay(delay));
    }

    public JobInfo schedule(JobRequest request) {
        return scheduleAll(List.of(newJob(request, ""))).get(0);
    }

    /**
     * The request as the store takes it: the payload written as JSON, every rule checked
     * ({@link InvalidJobException} names the field, under {@code prefix} when not empty).
     */
    NewJob newJob(JobRequest request, String prefix) {
        try {
            String json;
            try {
                json = request.payload == null ? null : mapper.writeValueAsString(request.payload);
            } catch (JsonProcessingException e) {
                throw new InvalidJobException("payload", "payload cannot be written as JSON: " + e.getOriginalMessage());
            }
            return validator.validate(request.topic, request.id, request.delay == null ? null : millis(request.delay),
                    request.runAt == null ? null : request.runAt.toString(), request.maxAttempts, json,
                    request.ifExists, JobRetry.of(request.retryInitial == null ? null : millis(request.retryInitial),
                            request.retryMax == null ? null : millis(request.retryMax)), request.group);
        } catch (InvalidJobException e) {
            throw prefix.isEmpty() ? e : e.inItem(prefix);
        }
    }

    /**
     * The job as it is now (scheduled, inflight, dead, or succeeded within its topic's dedup
     * window), or empty when there is no such job.
     */
    public Optional<JobInfo> get(String topic, String id) {
        return store.await(getAsync(topic, id));
    }

    /** As {@link #get}, holding no thread; the checks throw before anything is sent. */
    Future<Optional<JobInfo>> getAsync(String topic, String id) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        return inspection.getAsync(topic, id);
    }

    /**
     * Cancels a scheduled job: {@link CancelOutcome#CANCELLED} when it was removed before it ran.
     * A job already running ({@link CancelOutcome#INFLIGHT}) is not stopped, so an observer that
     * must not act after a cancellation re-checks its own state.
     */
    public CancelOutcome cancel(String topic, String id) {
        return store.await(cancelAsync(topic, id));
    }

    /** As {@link #cancel}, holding no thread; the checks throw before anything is sent. */
    Future<CancelOutcome> cancelAsync(String topic, String id) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        return inspection.cancelAsync(topic, id);
    }

    /**
     * Moves a scheduled job to run at {@code runAt} (a past instant: at once), with its attempts,
     * payload and id as they were. {@link RescheduleResult#job()} is the job with its new runAt;
     * a job in flight or dead is not moved ({@link RescheduleResult.Outcome#INFLIGHT},
     * {@link RescheduleResult.Outcome#DEAD}).
     *
     * @throws InvalidJobException when runAt is beyond the horizon or before 1970 (field
     *         {@code runAt})
     */
    public RescheduleResult reschedule(String topic, String id, java.time.Instant runAt) {
        if (runAt == null) {
            throw new InvalidJobException("runAt", "runAt is required");
        }
        return reschedule(topic, id, validator.timing(null, runAt));
    }

    /** As above, to run {@code delay} after now (Redis time); {@link Duration#ZERO} runs it now. */
    public RescheduleResult reschedule(String topic, String id, Duration delay) {
        if (delay == null) {
            throw new InvalidJobException("delayMs", "delayMs is required");
        }
        return reschedule(topic, id, validator.timing(millis(delay), null));
    }

    /**
     * A delay in ms, saturated rather than overflowing (Duration.toMillis throws past Long.MAX_VALUE
     * ms): the validator then refuses it as beyond the horizon, naming delayMs.
     */
    private static long millis(Duration delay) {
        try {
            return delay.toMillis();
        } catch (ArithmeticException e) {
            return delay.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
    }

    /** Runs a scheduled job now rather than at its runAt: {@code reschedule(topic, id, Duration.ZERO)}. */
    public RescheduleResult runNow(String topic, String id) {
        return reschedule(topic, id, Duration.ZERO);
    }

    /** Moves a scheduled job to a checked time ({@link JobValidator#timing}). */
    public RescheduleResult reschedule(String topic, String id, JobValidator.Timing when) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        return inspection.reschedule(topic, id, when.delayed(), when.millis());
    }

    /**
     * Enqueues validated jobs, one atomic script per topic partition, and returns their results
     * in input order. Called inside a trace (a traced REST request, a span of the caller's), the
     * jobs keep its context and their attempts run in that trace.
     */
    public List<JobInfo> scheduleAll(List<NewJob> jobs) {
        return store.await(scheduleAllAsync(jobs));
    }

    /**
     * As {@link #scheduleAll}, holding no thread: the partitions one after the other, as there,
     * so that a failure leaves the later partitions unwritten. May be called on an event loop; the
     * future may complete on one. (The REST API's enqueue; reactive code uses {@link ReactiveJobs}.)
     */
    public Future<List<JobInfo>> scheduleAllAsync(List<NewJob> jobs) {
        return scheduleAllAsync(jobs, null);
    }

    /**
     * As {@link #scheduleAllAsync(List)}, for a request that came with a W3C {@code traceparent}
     * header (null: none): the jobs keep that trace even when nothing here traces the request.
     */
    public Future<List<JobInfo>> scheduleAllAsync(List<NewJob> jobs, String traceparent) {
        String trace = JobTracing.forEnqueue(tracing.currentContext(), traceparent);
        Map<Partition, List<Integer>> byPartition = new LinkedHashMap<>();
        for (int i = 0; i < jobs.size(); i++) {
            NewJob job = jobs.get(i);
            byPartition.computeIfAbsent(store.partitionOf(job.topic(), job.id(), job.group()), p -> new ArrayList<>()).add(i);
        }
        JobInfo[] out = new JobInfo[jobs.size()];
        Future<Void> done = Future.succeededFuture();
        for (Map.Entry<Partition, List<Integer>> e : byPartition.entrySet()) {
            List<NewJob> part = new ArrayList<>(e.getValue().size());
            e.getValue().forEach(i -> part.add(jobs.get(i)));
            done = done.compose(v -> store.enqueueAsync(e.getKey(), part, trace).recover(failure -> Future
                    .failedFuture(failure instanceof StoreUnavailableException u ? unavailable(u, jobs, out, e.getValue())
                            : failure))).map(results -> {
                int created = 0;
                for (int j = 0; j < results.size(); j++) {
                    out[e.getValue().get(j)] = results.get(j);
                    created += results.get(j).created() ? 1 : 0;
                }
                metrics.enqueued(e.getKey().topic(), created);
                return null;
            });
        }
        return done.map(v -> List.of(out));
    }

    /**
     * The failure of one partition's script, with what is known of every job of the request: the
     * partitions before it are written ({@code out} holds their results), its own may or may not
     * be (Redis refused it, or it timed out), the later ones were never sent.
     */
    private static StoreUnavailableException unavailable(StoreUnavailableException failure, List<NewJob> jobs,
            JobInfo[] out, List<Integer> failed) {
        List<EnqueueOutcome> outcomes = new ArrayList<>(jobs.size());
        java.util.Set<Integer> inFailed = new java.util.HashSet<>(failed);
        for (int i = 0; i < jobs.size(); i++) {
            EnqueueOutcome.Stored stored = out[i] != null ? EnqueueOutcome.Stored.STORED
                    : inFailed.contains(i) && !failure.refused() ? EnqueueOutcome.Stored.UNKNOWN
                            : EnqueueOutcome.Stored.NOT_STORED;
            outcomes.add(new EnqueueOutcome(jobs.get(i).id(), jobs.get(i).topic(), stored));
        }
        return failure.naming(outcomes);
    }
}
