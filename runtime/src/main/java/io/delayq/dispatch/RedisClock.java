package io.delayq.dispatch;

import jakarta.enterprise.context.ApplicationScoped;

/**
 * Redis server time as seen from this host. Due times are Redis time (one clock for all pods);
 * sleeping needs the local clock. Every take reports Redis "now"; the offset is taken from the
 * sample with the shortest round trip, refreshed every few seconds so that drift is followed.
 */
@ApplicationScoped
public class RedisClock {
    private volatile long offsetMs;
    private long bestRtt = Long.MAX_VALUE;
    private long bestAt;

    /** Records a Redis time read between local {@code beforeMs} and {@code afterMs}. */
    public synchronized void observe(long redisNowMs, long beforeMs, long afterMs) {
        long rtt = afterMs - beforeMs;
        if (rtt <= bestRtt || afterMs - bestAt > 5_000) {
            bestRtt = rtt;
            bestAt = afterMs;
            offsetMs = redisNowMs - (beforeMs + afterMs) / 2;
        }
    }

    /** Current Redis time estimated from the local clock. */
    public long redisNow() {
        return System.currentTimeMillis() + offsetMs;
    }

    /** The local-clock instant of a Redis-time instant. */
    public long toLocal(long redisMs) {
        return redisMs - offsetMs;
    }
}
