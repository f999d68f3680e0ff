package io.delayq.store;

/**
 * What a failed attempt led to.
 *
 * @param kind RETRY (rescheduled at {@code at}), DEAD (died at {@code at}) or STALE (the lease was
 *        no longer ours; nothing changed)
 */
public record FailOutcome(Kind kind, long at, int attempts) {
    public enum Kind {
        RETRY, DEAD, STALE
    }
}
