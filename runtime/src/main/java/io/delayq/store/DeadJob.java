package io.delayq.store;

/** A job of the dead set with the time it died. */
public record DeadJob(String id, long diedAt, JobRecord record) {
}
