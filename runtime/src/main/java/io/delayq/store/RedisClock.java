package io.delayq.store;

import java.util.function.LongSupplier;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import io.delayq.core.RedisTime;

/**
 * Redis server time as seen from this host. Due times are Redis time (one clock for all pods);
 * sleeping needs a local clock. Every take reports Redis "now"; this clock keeps the sample with
 * the shortest round trip (refreshed every few seconds so that drift is followed) and counts
 * forward from it on the host's monotonic clock — never the wall clock, which an NTP step can
 * move backwards (every take would then wait that much longer) or forwards (early takes are
 * harmless: the script decides with Redis' own TIME).
 */
@ApplicationScoped
public class RedisClock implements RedisTime {
    private static final long REFRESH_NANOS = 5_000_000_000L;
    private final LongSupplier nanos;
    /** Redis time at a monotonic instant; one immutable object, so no reader sees half of one. */
    private record Sample(long redisMs, long atNanos) {
    }

    private volatile Sample sample;
    private long bestRttNanos = Long.MAX_VALUE;
    private volatile boolean sampled;

    @Inject
    public RedisClock() {
        this(System::nanoTime);
    }

    /** A clock on the given monotonic nanosecond source (tests inject one). */
    public RedisClock(LongSupplier nanos) {
        this.nanos = nanos;
        this.sample = new Sample(System.currentTimeMillis(), nanos.getAsLong()); // until the first take says better
    }

    /** Whether a Redis time was observed yet: before, this clock counts from the host's wall clock. */
    public boolean sampled() {
        return sampled;
    }

    /** How long ago (nanoseconds, monotonic) the current sample was taken; meaningless before {@link #sampled}. */
    public long sampleAgeNanos() {
        return nanos.getAsLong() - sample.atNanos();
    }

    /** This host's monotonic clock, in nanoseconds: what {@link #observe} wants around a Redis call. */
    public long monotonicNanos() {
        return nanos.getAsLong();
    }

    /** Records a Redis time read between the monotonic instants {@code beforeNanos} and {@code afterNanos}. */
    public synchronized void observe(long redisNowMs, long beforeNanos, long afterNanos) {
        long rtt = afterNanos - beforeNanos;
        if (!sampled || rtt <= bestRttNanos || afterNanos - sample.atNanos() > REFRESH_NANOS) {
            sampled = true;
            bestRttNanos = rtt;
            sample = new Sample(redisNowMs, beforeNanos + rtt / 2);
        }
    }

    /**
     * The monotonic instant (as {@link #monotonicNanos}) at which {@link #redisNow} reaches
     * {@code redisMs} by the current sample: what a timer for that Redis time waits for. At most
     * an hour ahead (a later instant is looked at again then).
     */
    public long nanosAt(long redisMs) {
        Sample s = sample;
        long aheadMs = Math.min(redisMs - s.redisMs(), 3_600_000L);
        return s.atNanos() + aheadMs * 1_000_000;
    }

    /** Current Redis time estimated from the last good sample and the monotonic clock. */
    @Override
    public long redisNow() {
        Sample s = sample;
        return s.redisMs() + (nanos.getAsLong() - s.atNanos()) / 1_000_000;
    }
}
