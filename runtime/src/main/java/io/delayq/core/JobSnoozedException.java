package io.delayq.core;

import java.time.Duration;
import java.time.Instant;

/**
 * Thrown by {@link Job#snooze(Duration)} and {@link Job#snoozeUntil(Instant)}: the attempt ends
 * without counting, and the job is due again at the time asked. An exception rather than a
 * return value because observers return {@code void}; let it propagate (a {@code catch
 * (Exception e)} around the call would swallow the snooze and the job would be acked).
 */
public final class JobSnoozedException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient Duration delay;
    private final transient Instant until;

    JobSnoozedException(Job job, Duration delay, Instant until) {
        super(job + " snoozed " + (delay != null ? "for " + delay : "until " + until), null, false, false);
        this.delay = delay;
        this.until = until;
    }

    /** The delay from the snooze (by Redis time), or {@code null} when a time was asked. */
    public Duration delay() {
        return delay;
    }

    /** The time asked, or {@code null} when a delay was asked. */
    public Instant until() {
        return until;
    }
}
