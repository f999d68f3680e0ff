package io.delayq.core;

/** What {@link Jobs#cancel} (and {@code DELETE /jobs/{topic}/{id}}) found. */
public enum CancelOutcome {
    /** The job was scheduled and is gone: it will not run. */
    CANCELLED,
    /**
     * The job is running: its cancel is recorded with it in Redis and the replica running it ends
     * the attempt (within about a second); it will not run again, and then leaves (no retry, no dead
     * entry). An attempt that returned before the cancel reached it counts as succeeded.
     */
    CANCELLING,
    /** No job with this topic and id (never enqueued, already done, or cancelled before). */
    UNKNOWN,
    /** The job is leased but has no lease holder on record (not seen in practice); it was not cancelled. */
    INFLIGHT,
    /** The job is in the dead set; purge it instead. */
    DEAD
}
