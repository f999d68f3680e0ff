package io.delayq.core;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import io.vertx.core.Future;

/**
 * Schedules jobs from Java code in the same application:
 * {@code jobs.schedule("order-close", payload, Duration.ofMinutes(30))}. The job is in Redis when
 * the call returns; inside a JTA transaction it is sent when the transaction commits, or written
 * to the transactional outbox ({@code delayq.transactions}), and the reply is then
 * {@link JobInfo#pendingCommit(String, String, java.time.Instant)}. Scheduling an id that exists returns the existing job (idempotent); on a
 * topic with a dedup window, so does an id that succeeded within it ({@link JobState#SUCCEEDED},
 * with {@link JobInfo#finishedAt()}): it does not run again. A request with
 * {@link JobRequest#ifExists(IfExists)} replace or extend changes a scheduled job instead.
 * Inject it; the extension provides the one implementation (io.delayq.service.JobsService).
 *
 * @throws InvalidJobException on a rule broken (names the field); {@link IdTakenException} (a
 *         subclass) when an id is already a job of its topic with another group, or none (with
 *         several partitions: see {@link JobRequest#group})
 * @throws io.delayq.store.StoreUnavailableException when Redis cannot be reached (nothing written)
 * @see ReactiveJobs the same, returning {@code Uni}s, for code on an event loop
 */
public interface Jobs {
    /** Schedules {@code payload} on {@code topic} to run after {@code delay}, under a generated id. */
    default JobInfo schedule(String topic, Object payload, Duration delay) {
        return schedule(JobRequest.topic(topic).payload(payload).delay(delay));
    }

    JobInfo schedule(JobRequest request);

    /**
     * The job as it is now (scheduled, inflight, dead, or succeeded within its topic's dedup
     * window), or empty when there is no such job.
     */
    Optional<JobInfo> get(String topic, String id);

    /**
     * Cancels a job: {@link CancelOutcome#CANCELLED} when it was scheduled and was removed before it
     * ran; {@link CancelOutcome#CANCELLING} when it is running: the cancel is recorded with it in
     * Redis, and the replica running it ends the attempt (a synchronous observer's thread is
     * interrupted, a reactive observer's subscription cancelled, an HTTP target's call aborted,
     * {@link Job#cancelled()} turns true), then the job leaves: no retry, no dead entry. It will not
     * run again; an attempt that returned before the cancel reached it counts as succeeded.
     */
    CancelOutcome cancel(String topic, String id);

    /**
     * Moves a scheduled job to run at {@code runAt} (a past instant: at once), with its attempts,
     * payload and id as they were. {@link RescheduleResult#job()} is the job with its new runAt;
     * a job in flight or dead is not moved ({@link RescheduleResult.Outcome#INFLIGHT},
     * {@link RescheduleResult.Outcome#DEAD}).
     *
     * @throws InvalidJobException when runAt is beyond the horizon or before 1970 (field
     *         {@code runAt})
     */
    RescheduleResult reschedule(String topic, String id, Instant runAt);

    /** As above, to run {@code delay} after now (Redis time); {@link Duration#ZERO} runs it now. */
    RescheduleResult reschedule(String topic, String id, Duration delay);

    /** Runs a scheduled job now rather than at its runAt: {@code reschedule(topic, id, Duration.ZERO)}. */
    default RescheduleResult runNow(String topic, String id) {
        return reschedule(topic, id, Duration.ZERO);
    }

    /** Moves a scheduled job to a checked time ({@link JobValidator#timing}). */
    RescheduleResult reschedule(String topic, String id, JobValidator.Timing when);

    /**
     * Enqueues validated jobs, one atomic script per topic partition, and returns their results
     * in input order. Called inside a trace (a traced REST request, a span of the caller's), the
     * jobs keep its context and their attempts run in that trace.
     */
    List<JobInfo> scheduleAll(List<NewJob> jobs);

    /**
     * As {@link #scheduleAll}, holding no thread: the partitions one after the other, as there,
     * so that a failure leaves the later partitions unwritten. May be called on an event loop; the
     * future may complete on one. (The REST API's enqueue; reactive code uses {@link ReactiveJobs}.)
     */
    default Future<List<JobInfo>> scheduleAllAsync(List<NewJob> jobs) {
        return scheduleAllAsync(jobs, null);
    }

    /**
     * As {@link #scheduleAllAsync(List)}, for a request that came with a W3C {@code traceparent}
     * header (null: none): the jobs keep that trace even when nothing here traces the request.
     */
    Future<List<JobInfo>> scheduleAllAsync(List<NewJob> jobs, String traceparent);
}
