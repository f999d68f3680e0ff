package io.delayq.dispatch;

import java.time.Duration;
import java.time.Instant;

/**
 * An attempt whose target asked for no call to the whole topic before a time (an HTTP target's
 * 429 or 503 with {@code Retry-After}): {@link JobRunner} snoozes the job until then, the attempt
 * not counted, and holds the topic on every replica until then. Jobs of other topics are not
 * affected: the target said it is overloaded, not that delayq is.
 */
public final class TopicThrottledException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient Duration delay;
    private final transient Instant until;

    /** Exactly one of {@code delay} (from Redis now) and {@code until} is given. */
    public TopicThrottledException(String message, Duration delay, Instant until) {
        super(message, null, false, false);
        if ((delay == null) == (until == null)) {
            throw new IllegalArgumentException("a delay or a time, not both nor neither");
        }
        this.delay = delay;
        this.until = until;
    }

    /** The delay asked (by Redis time), or {@code null} when a time was asked. */
    public Duration delay() {
        return delay;
    }

    /** The time asked, or {@code null} when a delay was asked. */
    public Instant until() {
        return until;
    }
}
