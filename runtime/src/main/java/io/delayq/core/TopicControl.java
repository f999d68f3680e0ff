package io.delayq.core;

import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * An operator's flow control of topics, for every replica at once (the state is in Redis, read by
 * the take script): pause and resume, and a rate limit and a concurrency cap that win over the configuration's; and
 * forgetting a topic no longer used. The REST endpoints under {@code /topics/{topic}} and the
 * dashboard call this. Inject it; the extension provides the one implementation
 * (io.delayq.service.TopicControlService). The rules for a rate limit and a cap are here too, for
 * callers that read one from input.
 *
 * @throws InvalidJobException on a rule broken (names the field)
 * @throws io.delayq.store.StoreUnavailableException when Redis cannot be reached
 */
public interface TopicControl {
    /** Far above what one Redis can take; a typo (5e9) should not read as "no limit". */
    double MAX_RATE = 1_000_000;
    /** One job in about 17 minutes: slower limits are pauses, and would overflow the pace's arithmetic. */
    double MIN_RATE = 0.001;
    /** The largest concurrency cap: far above any replica count times concurrency. */
    int MAX_IN_FLIGHT = 1_000_000;

    /**
     * Forgets a topic: gone from the known topics ({@code GET /topics}, the dashboard), with what
     * Redis keeps for it (pause, rate limit, tick records, dedup ids). Refused while a live replica
     * serves it or it holds jobs (scheduled, in flight or dead: cancel or purge them first) or dead-job
     * callbacks still to send (their job purged or requeued meanwhile). A job
     * enqueued meanwhile is never lost: it is stored, the topic stays known, and the answer is
     * {@link ForgetResult.Outcome#HAS_JOBS}. A new job later simply lists the topic again.
     */
    ForgetResult forget(String topic);

    /**
     * Stops every replica from taking the topic's jobs. Enqueue still works, and jobs in flight
     * run to their end (acks, retries and lease reclaims as usual). Pausing a paused topic keeps
     * its first {@code pausedAt}; a topic with no jobs yet may be paused.
     */
    TopicFlow pause(String topic);

    /** Lets replicas take the topic's jobs again; those due go at once (the takers are woken). */
    TopicFlow resume(String topic);

    /**
     * Limits the topic to {@code perSecond} jobs taken per second by all replicas together,
     * from now on and over any {@code delayq.topics.<t>.rate-limit}; kept in Redis until
     * {@link #clearRateLimit}.
     */
    TopicFlow setRateLimit(String topic, double perSecond);

    /** Removes the limit set by {@link #setRateLimit}: the configuration's (if any) applies again. */
    TopicFlow clearRateLimit(String topic);

    /**
     * Limits each group of the topic to {@code perSecond} jobs taken per second by all replicas
     * together, from its next take on and over any {@code delayq.topics.<t>.group-rate-limit}; kept
     * in Redis until {@link #clearGroupRateLimit}. A group at its limit never delays another group.
     */
    TopicFlow setGroupRateLimit(String topic, double perSecond);

    /** Removes the limit set by {@link #setGroupRateLimit}: the configuration's (if any) applies again. */
    TopicFlow clearGroupRateLimit(String topic);

    /**
     * Caps the topic at {@code max} jobs in flight at once over all replicas, from its next take
     * on and over any {@code delayq.topics.<t>.max-in-flight}; kept in Redis until
     * {@link #clearMaxInFlight}. Jobs already in flight run to their end (a lower cap only holds
     * the next takes back).
     */
    TopicFlow setMaxInFlight(String topic, int max);

    /** Removes the cap set by {@link #setMaxInFlight}: the configuration's (if any) applies again. */
    TopicFlow clearMaxInFlight(String topic);

    /** The topic's flow control as it is now. */
    default TopicFlow flow(String topic) {
        JobValidator.checkTopic("topic", topic);
        return flows(List.of(topic)).get(topic);
    }

    /** The flow control of several topics, in their order (one Redis round trip). */
    default Map<String, TopicFlow> flows(Collection<String> topics) {
        return flows(topics, Map.of());
    }

    /**
     * As {@link #flows(Collection)}, with the jobs in flight of the topics the caller has just
     * counted (a topic listing): not read again.
     */
    Map<String, TopicFlow> flows(Collection<String> topics, Map<String, Long> inflightKnown);

    /** The rule for a concurrency cap, for callers that read one from input. */
    static void checkMaxInFlight(String field, long max, int partitions) {
        String broken = brokenMaxInFlight(max, partitions);
        if (broken != null) {
            throw new InvalidJobException(field, field + " " + broken);
        }
    }

    /**
     * What is wrong with a concurrency cap of {@code max} over {@code partitions} partitions, null
     * when nothing: each partition's share must be at least one job, or the jobs of the partitions
     * left with none would never run.
     */
    static String brokenMaxInFlight(long max, int partitions) {
        if (max < Math.max(1, partitions) || max > MAX_IN_FLIGHT) {
            return "must be an integer from " + Math.max(1, partitions) + " to " + MAX_IN_FLIGHT + ", not " + max
                    + (partitions > 1 && max >= 1 && max < partitions ? " (delayq.partitions is " + partitions
                            + ": each partition runs its share of the cap, at least one job; to stop a topic, pause it)"
                            : " (to stop a topic, pause it)");
        }
        return null;
    }

    /** The rule for a rate limit, for callers that read one from input. */
    static void checkRate(String field, double perSecond) {
        if (!(perSecond >= MIN_RATE) || perSecond > MAX_RATE) {
            throw new InvalidJobException(field, field + " must be a number of jobs per second from " + MIN_RATE
                    + " to " + (long) MAX_RATE + " (to stop a topic, pause it)");
        }
    }
}
