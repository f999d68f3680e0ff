package io.delayq.store;

/**
 * A topic's flow control as Redis holds it (the same in every partition, unless a change was cut
 * short half-way: then {@code pausedAt} is the earliest pause of any partition, and
 * {@code heldUntil} the latest hold).
 *
 * @param pausedAt Redis time (ms) the topic was paused at, -1 when it is not paused
 * @param rateLimit the rate limit set over REST, jobs/s; null when the configuration's applies
 * @param heldUntil Redis time (ms) until which the topic is held because its HTTP target answered
 *        429 or 503 with {@code Retry-After}; -1 when it is not held
 * @param maxInFlight the concurrency cap set over REST, jobs in flight at once; null when the
 *        configuration's applies
 * @param inflight jobs of the topic in flight now, summed over its partitions
 * @param groupRateLimit the group rate limit set over REST, jobs/s per group; null when the
 *        configuration's applies
 */
public record FlowSettings(long pausedAt, Double rateLimit, long heldUntil, Integer maxInFlight, long inflight,
        Double groupRateLimit) {
    static final FlowSettings NONE = new FlowSettings(-1, null, -1, null, 0, null);

    public boolean paused() {
        return pausedAt >= 0;
    }

    public boolean held() {
        return heldUntil >= 0;
    }
}
