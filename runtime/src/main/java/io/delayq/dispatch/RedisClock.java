package io.delayq.dispatch;

import java.util.function.LongSupplier;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

/**
 * Redis server time as seen from this host. Due times are Redis time (one clock for all pods);
 * sleeping needs a local clock. Every take reports Redis "now"; this clock keeps the sample with
 * the shortest round trip (refreshed every few seconds so that drift is followed) and counts
 * forward from it on the host's monotonic clock — never the wall clock, which an NTP step can
 * move backwards (every take would then wait that much longer) or forwards (early takes are
 * harmless: the script decides with Redis' own TIME).
 */
@ApplicationScoped
public class RedisClock {
    private static final long REFRESH_NANOS = 5_000_000_000L;
    private final LongSupplier nanos;
    private volatile long redisAtSampleMs;
    private volatile long sampleNanos;
    private long bestRttNanos = Long.MAX_VALUE;
    private boolean sampled;

    @Inject
    public RedisClock() {
        this(System::nanoTime);
    }

    /** A clock on the given monotonic nanosecond source (tests inject one). */
    public RedisClock(LongSupplier nanos) {
        this.nanos = nanos;
        this.sampleNanos = nanos.getAsLong();
        this.redisAtSampleMs = System.currentTimeMillis(); // until the first take says better
    }

    /** This host's monotonic clock, in nanoseconds: what {@link #observe} wants around a Redis call. */
    public long monotonicNanos() {
        return nanos.getAsLong();
    }

    /** Records a Redis time read between the monotonic instants {@code beforeNanos} and {@code afterNanos}. */
    public synchronized void observe(long redisNowMs, long beforeNanos, long afterNanos) {
        long rtt = afterNanos - beforeNanos;
        if (!sampled || rtt <= bestRttNanos || afterNanos - sampleNanos > REFRESH_NANOS) {
            sampled = true;
            bestRttNanos = rtt;
            long middle = beforeNanos + rtt / 2;
            // Written in this order with volatile fields; a reader between the two writes sees a
            // Redis time off by at most one round trip, the precision of the sample anyway.
            redisAtSampleMs = redisNowMs;
            sampleNanos = middle;
        }
    }

    /** Current Redis time estimated from the last good sample and the monotonic clock. */
    public long redisNow() {
        return redisAtSampleMs + (nanos.getAsLong() - sampleNanos) / 1_000_000;
    }
}
