package io.delayq.core;

/**
 * A validated job about to be enqueued (the store's input).
 *
 * @param delayed true: runAt = Redis now + {@code millis}; false: runAt = {@code millis} (epoch ms)
 * @param maxAttempts 0 = the topic's default
 * @param payloadJson the payload JSON as sent, {@code null} when the job has no payload
 * @param ifExists what happens when the id exists (never null)
 * @param retry the job's own retry backoff, null = the topic's
 * @param timeoutMs the job's own attempt timeout (1 ms .. 24 h), null = the topic's
 * @param expiresAt epoch ms after which the job is never started, null = none
 * @param priority 1 (first) .. 5 (last), null = not given: 3 for a new job, the stored one for a
 *        replace or extend
 */
public record NewJob(String topic, String id, boolean delayed, long millis, int maxAttempts, String payloadJson,
        IfExists ifExists, JobRetry retry, String group, Long timeoutMs, Long expiresAt, Integer priority) {

    public NewJob {
        if (ifExists == null) {
            ifExists = IfExists.KEEP;
        }
    }

    /** A job that gives no priority. */
    public NewJob(String topic, String id, boolean delayed, long millis, int maxAttempts, String payloadJson,
            IfExists ifExists, JobRetry retry, String group, Long timeoutMs, Long expiresAt) {
        this(topic, id, delayed, millis, maxAttempts, payloadJson, ifExists, retry, group, timeoutMs, expiresAt, null);
    }

    /** The priority the job is stored with when it is new: 3 when it gives none. */
    public int priorityOrDefault() {
        return priority == null ? 3 : priority;
    }

    /** A job without limits of its own (timeout, expiresAt). */
    public NewJob(String topic, String id, boolean delayed, long millis, int maxAttempts, String payloadJson,
            IfExists ifExists, JobRetry retry, String group) {
        this(topic, id, delayed, millis, maxAttempts, payloadJson, ifExists, retry, group, null, null);
    }

    /** Whether the job has a limit of its own (timeout, expiresAt). */
    public boolean limited() {
        return timeoutMs != null || expiresAt != null;
    }

    /** A job of no group. */
    public NewJob(String topic, String id, boolean delayed, long millis, int maxAttempts, String payloadJson,
            IfExists ifExists, JobRetry retry) {
        this(topic, id, delayed, millis, maxAttempts, payloadJson, ifExists, retry, null);
    }

    /** The key that picks the job's partition: its group's when it has one, else its id. */
    public String partitionKey() {
        return group == null ? id : group;
    }

    /** A job that follows its topic's retry backoff. */
    public NewJob(String topic, String id, boolean delayed, long millis, int maxAttempts, String payloadJson,
            IfExists ifExists) {
        this(topic, id, delayed, millis, maxAttempts, payloadJson, ifExists, null);
    }

    /** A job that leaves an existing id as it is ({@link IfExists#KEEP}). */
    public NewJob(String topic, String id, boolean delayed, long millis, int maxAttempts, String payloadJson) {
        this(topic, id, delayed, millis, maxAttempts, payloadJson, IfExists.KEEP);
    }
}
