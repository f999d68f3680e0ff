package io.delayq.core;

import java.time.Instant;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonValue;

import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * A topic's flow control as every replica sees it: whether it is paused, the rate limit its
 * jobs are taken at, and until when its HTTP target asked for no call (the reply of
 * {@code POST /topics/{topic}/pause}, {@code /resume} and {@code /rate-limit}).
 *
 * @param pausedAt when it was paused (Redis time); null when it is not paused
 * @param rateLimit the limit in force, null when there is none
 * @param throttledUntil until when no replica takes its jobs because its HTTP target answered 429
 *        or 503 with {@code Retry-After} (Redis time, capped by {@code http.max-retry-after}); null
 *        when it is not throttled
 * @param maxInFlight the concurrency cap in force, with the jobs in flight now; null when there is none
 * @param groupRateLimit the rate limit per group in force (jobs of one group per second), null when
 *        there is none
 */
@RegisterForReflection
@JsonInclude(JsonInclude.Include.NON_NULL)
public record TopicFlow(String topic, boolean paused, Instant pausedAt, RateLimit rateLimit, Instant throttledUntil,
        MaxInFlight maxInFlight, RateLimit groupRateLimit) {

    /** As before the concurrency cap: none. */
    public TopicFlow(String topic, boolean paused, Instant pausedAt, RateLimit rateLimit, Instant throttledUntil) {
        this(topic, paused, pausedAt, rateLimit, throttledUntil, null, null);
    }

    /** As before the group rate limit: none. */
    public TopicFlow(String topic, boolean paused, Instant pausedAt, RateLimit rateLimit, Instant throttledUntil,
            MaxInFlight maxInFlight) {
        this(topic, paused, pausedAt, rateLimit, throttledUntil, maxInFlight, null);
    }

    /**
     * A concurrency cap: at most {@code max} jobs of the topic in flight at once over all replicas
     * (with P partitions, partition i runs floor(max / P) of them, plus one when i &lt; max mod P);
     * {@code inflight} of them are now (leases not yet reclaimed included).
     */
    @RegisterForReflection
    public record MaxInFlight(int max, Source source, long inflight) {
    }

    /**
     * A rate limit: at most {@code perSecond} jobs of the topic taken per second by all replicas
     * together (with P partitions, a P-th of it per partition); as a group rate limit, at most
     * {@code perSecond} jobs of each group.
     */
    @RegisterForReflection
    public record RateLimit(double perSecond, Source source) {
    }

    /** Where a rate limit or a concurrency cap comes from. */
    public enum Source {
        /**
         * Set by an operator ({@link TopicControl#setRateLimit}, {@code PUT /topics/{topic}/rate-limit};
         * {@link TopicControl#setMaxInFlight}, {@code PUT /topics/{topic}/max-in-flight};
         * {@link TopicControl#setGroupRateLimit}, {@code PUT /topics/{topic}/group-rate-limit}), kept in Redis.
         */
        API,
        /**
         * {@code delayq.topics.<t>.rate-limit} (or {@code max-in-flight}, {@code group-rate-limit}) of this
         * replica's configuration.
         */
        CONFIG;

        @JsonValue
        public String json() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }
}
