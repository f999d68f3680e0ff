package io.delayq.core;

/**
 * What {@link Jobs#reschedule} (and {@code PATCH /jobs/{topic}/{id}}) did.
 *
 * @param job the job as it is now, with its new runAt; null unless {@link Outcome#RESCHEDULED}
 */
public record RescheduleResult(Outcome outcome, JobInfo job) {

    public enum Outcome {
        /** The job was scheduled and now runs at its new runAt. */
        RESCHEDULED,
        /** No scheduled job with this topic and id (never enqueued, done, or cancelled). */
        UNKNOWN,
        /** The job is running now; it was not moved. */
        INFLIGHT,
        /** The job is in the dead set; requeue it instead. */
        DEAD
    }

    public boolean rescheduled() {
        return outcome == Outcome.RESCHEDULED;
    }
}
