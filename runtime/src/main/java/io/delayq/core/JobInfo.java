package io.delayq.core;

import java.time.Instant;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * What delayq knows of one job: the reply to enqueue and {@code GET /jobs/{topic}/{id}}.
 *
 * @param created true when this call created the job, false when the id already existed
 *        (idempotent enqueue); not serialized
 */
@RegisterForReflection
@JsonInclude(JsonInclude.Include.NON_NULL)
public record JobInfo(String id, String topic, Instant runAt, JobState state, int attempts,
        Integer maxAttempts, String lastError, Instant deadAt,
        @com.fasterxml.jackson.annotation.JsonIgnore boolean created) {

    /** The short form the enqueue endpoints reply with. */
    public static JobInfo enqueued(String id, String topic, Instant runAt, JobState state, int attempts,
            boolean created) {
        return new JobInfo(id, topic, runAt, state, attempts, null, null, null, created);
    }
}
