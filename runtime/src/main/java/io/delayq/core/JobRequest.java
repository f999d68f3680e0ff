package io.delayq.core;

import java.time.Duration;
import java.time.Instant;

/**
 * A job to schedule from Java: {@code JobRequest.topic("order-close").id("order-42").payload(p).runAt(t)}.
 * Give at most one of {@link #delay(Duration)} and {@link #runAt(Instant)}; neither means now.
 * The id is generated when none is given. Validated by {@link Jobs#schedule(JobRequest)}.
 */
public final class JobRequest {
    final String topic;
    String id;
    Object payload;
    Duration delay;
    Instant runAt;
    Integer maxAttempts;
    IfExists ifExists;
    Duration retryInitial;
    Duration retryMax;
    String group;
    Duration timeout;
    Instant expiresAt;
    Integer priority;

    private JobRequest(String topic) {
        this.topic = topic;
    }

    public static JobRequest topic(String topic) {
        return new JobRequest(topic);
    }

    /** Client-chosen id: scheduling the same id again while the job exists returns the existing job. */
    public JobRequest id(String id) {
        this.id = id;
        return this;
    }

    /** Any value Jackson can write; it reaches the observer as JSON. */
    public JobRequest payload(Object payload) {
        this.payload = payload;
        return this;
    }

    public JobRequest delay(Duration delay) {
        this.delay = delay;
        return this;
    }

    public JobRequest runAt(Instant runAt) {
        this.runAt = runAt;
        return this;
    }

    /**
     * What to do when the id exists: {@link IfExists#KEEP} (the default) answers the existing job;
     * {@link IfExists#REPLACE} gives a scheduled job this request's payload, runAt, maxAttempts
     * and retry ({@link JobInfo#replaced()}); {@link IfExists#EXTEND} does the same but never
     * moves its runAt earlier. A job in flight is answered as it is ({@link JobState#INFLIGHT});
     * a dead id, or one within the dedup window, is scheduled anew. Null means the default.
     */
    public JobRequest ifExists(IfExists ifExists) {
        this.ifExists = ifExists;
        return this;
    }

    /**
     * The job's group ("customer-7"; same pattern as an id): with the topic's
     * {@code delayq.topics.<t>.group-max-in-flight=M}, at most M jobs of one group run at once
     * over all replicas, in runAt order, and a busy group never holds back the others' jobs.
     * A group's jobs live in the group's partition: give a job the same group each time it is
     * scheduled. An id is one job per topic: scheduling it again with another group (or none)
     * while it exists is refused ({@link IdTakenException}; REST: 409 naming {@code group}).
     * Null means none.
     */
    public JobRequest group(String group) {
        this.group = group;
        return this;
    }

    /**
     * The job's own attempt timeout (1 ms .. 24 h), in place of its topic's
     * {@code delayq.dispatch.attempt-timeout} and, for an HTTP target, its {@code http.timeout}; a
     * retry after a timeout then waits at most min(timeout, 10 min). Null means the topic's.
     */
    public JobRequest timeout(Duration timeout) {
        this.timeout = timeout;
        return this;
    }

    /**
     * When the job stops being worth starting (after its runAt): a job not started by then is never
     * started, and a retry, snooze, rerun or reschedule that would make it due after it sends it to
     * the dead set instead, with lastError {@code "expired: ..."}. A requeue from the dead set clears
     * it. Null means none.
     */
    public JobRequest expiresAt(Instant expiresAt) {
        this.expiresAt = expiresAt;
        return this;
    }

    /**
     * The job's priority: 1 (first) .. 5 (last), default 3. Of the jobs due in a partition, a
     * higher priority is always taken first; it never starts a job before its runAt. With
     * {@link IfExists#REPLACE} or {@link IfExists#EXTEND}, a request that gives none keeps the
     * stored one.
     */
    public JobRequest priority(int priority) {
        this.priority = priority;
        return this;
    }

    /** Attempts before the job goes to the dead set (default: topic, then global setting). */
    public JobRequest maxAttempts(int maxAttempts) {
        this.maxAttempts = maxAttempts;
        return this;
    }

    /**
     * The job's own retry backoff, in place of its topic's {@code delayq.topics.<t>.retry.initial}
     * and {@code .retry.max} (the multiplier and jitter stay the topic's): the delay before the
     * second attempt, and the most between two attempts. Either may be null, for the topic's
     * (see {@link JobRetry}); each given is at least 1 ms and at most the horizon, and
     * {@code initial} no more than {@code max}. Kept with the job in Redis, so every replica
     * applies it.
     */
    public JobRequest retry(Duration initial, Duration max) {
        this.retryInitial = initial;
        this.retryMax = max;
        return this;
    }
}
