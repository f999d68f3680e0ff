package io.delayq.core;

/** What {@link Jobs#cancel} (and {@code DELETE /jobs/{topic}/{id}}) found. */
public enum CancelOutcome {
    /** The job was scheduled and is gone: it will not run. */
    CANCELLED,
    /** No job with this topic and id (never enqueued, already done, or cancelled before). */
    UNKNOWN,
    /** The job is running now; it was not cancelled. */
    INFLIGHT,
    /** The job is in the dead set; purge it instead. */
    DEAD
}
