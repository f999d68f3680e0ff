package io.delayq.store;

/**
 * What a failed attempt led to.
 *
 * @param kind RETRY (rescheduled at {@code at}), DEAD (died at {@code at}), STALE (the lease was
 *        no longer ours; nothing changed) or CANCELLED (its cancel was asked: the job is gone)
 */
public record FailOutcome(Kind kind, long at, int attempts) {
    public enum Kind {
        RETRY, DEAD, STALE, CANCELLED
    }
}
