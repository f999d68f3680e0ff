package io.delayq.core;

/**
 * A failure whose message says everything a reader of the job's {@code lastError} needs (the
 * dashboard, {@code GET /jobs}, a dead-job callback's body): the message is recorded alone,
 * without the exception's class name that other failures carry.
 */
public interface SelfDescribingFailure {
}
