package io.delayq.core;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * A job's own retry backoff, given at enqueue ({@code "retry": {"initialMs": 200, "maxMs": 400}}
 * over REST, {@link JobRequest#retry} from Java) in place of its topic's
 * {@code delayq.topics.<t>.retry.initial} and {@code .retry.max}. The multiplier and the jitter
 * stay the topic's. Either value may be left out (null): the topic's is used for it, moved so that
 * the job's value holds — a job's initial delay above the topic's max raises the max to it, a
 * job's max below the topic's initial delay lowers the initial delay to it.
 * <p>
 * Stored in the job's record, so every replica applies it; it stays with the job through retries,
 * lost attempts, snoozes, reschedules and a requeue from the dead set, and sets the backoff after
 * a lost attempt (a lease that expired, reclaim.lua) as well as after a failed one. An enqueue with
 * {@code ifExists} replace or extend gives the job the new request's retry (none: the topic's).
 *
 * @param initialMs delay before the second attempt, ms, at least 1; null: the topic's
 * @param maxMs upper bound of the delay between attempts, ms, at least 1 and at least initialMs;
 *        null: the topic's
 */
@RegisterForReflection
@JsonInclude(JsonInclude.Include.NON_NULL)
public record JobRetry(Long initialMs, Long maxMs) {

    /** Null when neither value is given (the job follows its topic). */
    public static JobRetry of(Long initialMs, Long maxMs) {
        return initialMs == null && maxMs == null ? null : new JobRetry(initialMs, maxMs);
    }

    /**
     * The backoff bounds in force for a job with this override on a topic whose own bounds are
     * {@code topicInitialMs} and {@code topicMaxMs}: {@code [initial, max]}.
     */
    public long[] applyTo(long topicInitialMs, long topicMaxMs) {
        long initial = initialMs != null ? initialMs : topicInitialMs;
        long max = maxMs != null ? maxMs : topicMaxMs;
        if (maxMs == null) {
            max = Math.max(max, initial);
        } else if (initialMs == null) {
            initial = Math.min(initial, max);
        }
        return new long[] { initial, max };
    }
}
