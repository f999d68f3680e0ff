package io.delayq.core;

import java.time.Instant;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * What delayq knows of one job: the reply to enqueue and {@code GET /jobs/{topic}/{id}}.
 *
 * @param lostAttempts leases of the job that expired in a row without an outcome (its replica
 *        crashed, was cut off or froze), counted apart from {@code attempts}: set in the reply to
 *        {@code GET /jobs/{topic}/{id}} of a job with a record, null elsewhere
 * @param retry the job's own retry backoff, given at enqueue: set in the reply to
 *        {@code GET /jobs/{topic}/{id}} of a job that has one, null elsewhere
 * @param attempts the failed attempts (snoozed and lost ones do not count); of a succeeded job kept by its
 *        topic's result-retention, the attempts it took, the one that succeeded included
 * @param finishedAt when the job succeeded: set for state {@link JobState#SUCCEEDED} only (a
 *        job of a topic with a result-retention, kept that long with its record and result; or of
 *        a topic with a dedup window, remembered that long: then it has no runAt, and attempts 0,
 *        only the time of success is remembered)
 * @param created true when this call created the job, false when the id already existed
 *        (idempotent enqueue); not serialized
 * @param cancelling true for a job in flight whose cancel was asked ({@code DELETE /jobs/{topic}/{id}}):
 *        it will not run again, and leaves once its attempt ends; null otherwise
 * @param timeoutMs the job's own attempt timeout, given at enqueue: set in the reply to
 *        {@code GET /jobs/{topic}/{id}} of a job that has one, null elsewhere
 * @param expiresAt when the job stops being worth starting, given at enqueue: set in the reply to
 *        {@code GET /jobs/{topic}/{id}} of a job that has one, null elsewhere
 * @param priority the job's priority, 1 (first) .. 5 (last; 3 when the enqueue gave none): set in
 *        the reply to {@code GET /jobs/{topic}/{id}} and in listings, null elsewhere
 * @param result a succeeded job's result as JSON text (shown as that JSON), kept by its topic's
 *        {@code result-retention}: what its observer set with {@link Job#result(Object)}, or its
 *        HTTP target's 2xx body; null when it has none
 * @param resultDropped true when the job's result was larger than the payload limit (or not JSON)
 *        and was not kept; null otherwise
 * @param resultCut true when {@code result} is the start of an HTTP target's body that was larger
 *        than the payload limit (a string); null otherwise
 * @param replaced true when this call changed the existing scheduled job
 *        ({@link IfExists#REPLACE}, {@link IfExists#EXTEND}); not serialized here (the enqueue
 *        reply says {@code "replaced": true})
 */
@RegisterForReflection
@JsonInclude(JsonInclude.Include.NON_NULL)
public record JobInfo(String id, String topic, Instant runAt, JobState state, int attempts, Integer lostAttempts,
        Integer maxAttempts, JobRetry retry, String group, Boolean held, String lastError, Instant deadAt,
        Instant finishedAt, Boolean cancelling, Long timeoutMs, Instant expiresAt, Integer priority,
        @com.fasterxml.jackson.annotation.JsonRawValue String result, Boolean resultDropped, Boolean resultCut,
        @com.fasterxml.jackson.annotation.JsonIgnore boolean created,
        @com.fasterxml.jackson.annotation.JsonIgnore boolean replaced) {

    /** A job without a result (all but a succeeded job its topic's result-retention keeps). */
    public JobInfo(String id, String topic, Instant runAt, JobState state, int attempts, Integer lostAttempts,
            Integer maxAttempts, JobRetry retry, String group, Boolean held, String lastError, Instant deadAt,
            Instant finishedAt, Boolean cancelling, Long timeoutMs, Instant expiresAt, Integer priority, boolean created,
            boolean replaced) {
        this(id, topic, runAt, state, attempts, lostAttempts, maxAttempts, retry, group, held, lastError, deadAt,
                finishedAt, cancelling, timeoutMs, expiresAt, priority, null, null, null, created, replaced);
    }

    /** A job whose priority is not told. */
    public JobInfo(String id, String topic, Instant runAt, JobState state, int attempts, Integer lostAttempts,
            Integer maxAttempts, JobRetry retry, String group, Boolean held, String lastError, Instant deadAt,
            Instant finishedAt, Boolean cancelling, Long timeoutMs, Instant expiresAt, boolean created, boolean replaced) {
        this(id, topic, runAt, state, attempts, lostAttempts, maxAttempts, retry, group, held, lastError, deadAt,
                finishedAt, cancelling, timeoutMs, expiresAt, null, created, replaced);
    }

    /** A job without limits of its own (timeout, expiresAt). */
    public JobInfo(String id, String topic, Instant runAt, JobState state, int attempts, Integer lostAttempts,
            Integer maxAttempts, JobRetry retry, String group, Boolean held, String lastError, Instant deadAt,
            Instant finishedAt, Boolean cancelling, boolean created, boolean replaced) {
        this(id, topic, runAt, state, attempts, lostAttempts, maxAttempts, retry, group, held, lastError, deadAt,
                finishedAt, cancelling, null, null, created, replaced);
    }

    /** A job that is not cancelling. */
    public JobInfo(String id, String topic, Instant runAt, JobState state, int attempts, Integer lostAttempts,
            Integer maxAttempts, JobRetry retry, String group, Boolean held, String lastError, Instant deadAt,
            Instant finishedAt, boolean created, boolean replaced) {
        this(id, topic, runAt, state, attempts, lostAttempts, maxAttempts, retry, group, held, lastError, deadAt,
                finishedAt, null, created, replaced);
    }

    /** A job of no group. */
    public JobInfo(String id, String topic, Instant runAt, JobState state, int attempts, Integer lostAttempts,
            Integer maxAttempts, JobRetry retry, String lastError, Instant deadAt, Instant finishedAt, boolean created,
            boolean replaced) {
        this(id, topic, runAt, state, attempts, lostAttempts, maxAttempts, retry, null, null, lastError, deadAt,
                finishedAt, created, replaced);
    }

    /** A job whose own retry backoff is not told. */
    public JobInfo(String id, String topic, Instant runAt, JobState state, int attempts, Integer lostAttempts,
            Integer maxAttempts, String lastError, Instant deadAt, Instant finishedAt, boolean created, boolean replaced) {
        this(id, topic, runAt, state, attempts, lostAttempts, maxAttempts, null, lastError, deadAt, finishedAt, created,
                replaced);
    }

    /** A job that this call did not replace. */
    public JobInfo(String id, String topic, Instant runAt, JobState state, int attempts, Integer lostAttempts,
            Integer maxAttempts, String lastError, Instant deadAt, Instant finishedAt, boolean created) {
        this(id, topic, runAt, state, attempts, lostAttempts, maxAttempts, lastError, deadAt, finishedAt, created, false);
    }

    /** A job whose lost attempts are not told (they are only read by {@code GET /jobs/{topic}/{id}}). */
    public JobInfo(String id, String topic, Instant runAt, JobState state, int attempts, Integer maxAttempts,
            String lastError, Instant deadAt, Instant finishedAt, boolean created) {
        this(id, topic, runAt, state, attempts, null, maxAttempts, lastError, deadAt, finishedAt, created);
    }

    /** The short form the enqueue endpoints reply with. */
    public static JobInfo enqueued(String id, String topic, Instant runAt, JobState state, int attempts,
            boolean created) {
        return new JobInfo(id, topic, runAt, state, attempts, null, null, null, null, null, created, false);
    }

    /** The short form of a job in flight whose cancel was asked (the enqueue of its id answers 409). */
    public static JobInfo cancelling(String id, String topic, Instant runAt, int attempts) {
        return new JobInfo(id, topic, runAt, JobState.INFLIGHT, attempts, null, null, null, null, null, null, null,
                null, Boolean.TRUE, false, false);
    }

    /** The short form of a scheduled job this call replaced ({@link IfExists#REPLACE}, {@link IfExists#EXTEND}). */
    public static JobInfo replaced(String id, String topic, Instant runAt, int attempts) {
        return replaced(id, topic, runAt, JobState.SCHEDULED, attempts);
    }

    /**
     * As above, in the state it is now: {@link JobState#DEAD} when the replace or extend left it due
     * after its expiresAt (it went to the dead set instead).
     */
    public static JobInfo replaced(String id, String topic, Instant runAt, JobState state, int attempts) {
        return new JobInfo(id, topic, runAt, state, attempts, null, null, null, null, null, false, true);
    }

    /**
     * A job enqueued inside a transaction that has not committed yet (the transactional outbox):
     * its id, topic and runAt as they will be written, and no state, since it is in no store of
     * delayq's until the transaction commits ({@link #pendingCommit()}); {@code created} false:
     * whether the id already exists is only known then.
     */
    public static JobInfo pendingCommit(String id, String topic, Instant runAt) {
        return new JobInfo(id, topic, runAt, null, 0, null, null, null, null, null, false, false);
    }

    /** True for a job of an uncommitted transaction ({@link #pendingCommit(String, String, Instant)}): no state yet. */
    @com.fasterxml.jackson.annotation.JsonIgnore
    public boolean pendingCommit() {
        return state == null;
    }

    /** An id that succeeded at {@code finishedAt}, within its topic's dedup window. */
    public static JobInfo succeeded(String id, String topic, Instant finishedAt) {
        return new JobInfo(id, topic, null, JobState.SUCCEEDED, 0, null, null, null, finishedAt, false);
    }
}
