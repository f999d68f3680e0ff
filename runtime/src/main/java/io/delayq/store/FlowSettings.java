package io.delayq.store;

/**
 * An operator's flow control of a topic as Redis holds it (the same in every partition, unless a
 * change was cut short half-way: then {@code pausedAt} is the earliest pause of any partition).
 *
 * @param pausedAt Redis time (ms) the topic was paused at, -1 when it is not paused
 * @param rateLimit the rate limit set over REST, jobs/s; null when the configuration's applies
 */
public record FlowSettings(long pausedAt, Double rateLimit) {
    static final FlowSettings NONE = new FlowSettings(-1, null);

    public boolean paused() {
        return pausedAt >= 0;
    }
}
