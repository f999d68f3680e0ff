package io.delayq.core;

import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;

import jakarta.enterprise.context.ApplicationScoped;

import io.delayq.ops.ReplicaRegistry;
import io.delayq.store.FlowSettings;
import io.delayq.store.TopicAdmin;

/**
 * An operator's flow control of topics, for every replica at once (the state is in Redis, read by
 * the take script): pause and resume, and a rate limit and a concurrency cap that win over the configuration's; and
 * forgetting a topic no longer used. The REST endpoints under {@code /topics/{topic}} and the
 * dashboard call this.
 *
 * @throws InvalidJobException on a rule broken (names the field)
 * @throws io.delayq.store.StoreUnavailableException when Redis cannot be reached
 */
@ApplicationScoped
public class TopicControl {
    /** Far above what one Redis can take; a typo (5e9) should not read as "no limit". */
    public static final double MAX_RATE = 1_000_000;
    /** One job in about 17 minutes: slower limits are pauses, and would overflow the pace's arithmetic. */
    public static final double MIN_RATE = 0.001;
    /** The largest concurrency cap: far above any replica count times concurrency. */
    public static final int MAX_IN_FLIGHT = 1_000_000;
    private final TopicAdmin store;
    private final ReplicaRegistry replicas;

    public TopicControl(TopicAdmin store, ReplicaRegistry replicas) {
        this.store = store;
        this.replicas = replicas;
    }

    /**
     * Forgets a topic: gone from the known topics ({@code GET /topics}, the dashboard), with what
     * Redis keeps for it (pause, rate limit, tick records, dedup ids). Refused while a live replica
     * serves it or it holds jobs (scheduled, in flight or dead: cancel or purge them first) or dead-job
     * callbacks still to send (their job purged or requeued meanwhile). A job
     * enqueued meanwhile is never lost: it is stored, the topic stays known, and the answer is
     * {@link ForgetResult.Outcome#HAS_JOBS}. A new job later simply lists the topic again.
     */
    public ForgetResult forget(String topic) {
        JobValidator.checkTopic("topic", topic);
        List<String> servers = replicas.servers(topic);
        if (!servers.isEmpty()) {
            return new ForgetResult(ForgetResult.Outcome.SERVED, "topic " + topic + " is served by replica(s) "
                    + String.join(", ", servers) + ": remove its observer or HTTP target first");
        }
        TopicAdmin.Forgetting f = store.forget(topic);
        return switch (f.outcome()) {
            case FORGOTTEN -> new ForgetResult(ForgetResult.Outcome.FORGOTTEN, null);
            case UNKNOWN -> new ForgetResult(ForgetResult.Outcome.UNKNOWN, "no topic " + topic);
            case HAS_JOBS -> new ForgetResult(ForgetResult.Outcome.HAS_JOBS, f.jobs() + f.inflight() + f.dead() == 0
                    ? "topic " + topic + " has " + f.callbacks() + " dead-job callback(s) still to send: wait for them"
                    : "topic " + topic + " has jobs: " + f.jobs() + " scheduled, " + f.inflight() + " in flight, "
                            + f.dead() + " dead (cancel or purge them first)");
            case IN_USE_AGAIN -> new ForgetResult(ForgetResult.Outcome.HAS_JOBS, "a job of topic " + topic
                    + " was enqueued while it was being forgotten: it stays known (its pause or rate limit may be gone)");
        };
    }

    /**
     * Stops every replica from taking the topic's jobs. Enqueue still works, and jobs in flight
     * run to their end (acks, retries and lease reclaims as usual). Pausing a paused topic keeps
     * its first {@code pausedAt}; a topic with no jobs yet may be paused.
     */
    public TopicFlow pause(String topic) {
        JobValidator.checkTopic("topic", topic);
        return view(topic, store.pause(topic));
    }

    /** Lets replicas take the topic's jobs again; those due go at once (the takers are woken). */
    public TopicFlow resume(String topic) {
        JobValidator.checkTopic("topic", topic);
        return view(topic, store.resume(topic));
    }

    /**
     * Limits the topic to {@code perSecond} jobs taken per second by all replicas together,
     * from now on and over any {@code delayq.topics.<t>.rate-limit}; kept in Redis until
     * {@link #clearRateLimit}.
     */
    public TopicFlow setRateLimit(String topic, double perSecond) {
        JobValidator.checkTopic("topic", topic);
        checkRate("perSecond", perSecond);
        return view(topic, store.setRateLimit(topic, perSecond));
    }

    /** Removes the limit set by {@link #setRateLimit}: the configuration's (if any) applies again. */
    public TopicFlow clearRateLimit(String topic) {
        JobValidator.checkTopic("topic", topic);
        return view(topic, store.clearRateLimit(topic));
    }

    /**
     * Caps the topic at {@code max} jobs in flight at once over all replicas, from its next take
     * on and over any {@code delayq.topics.<t>.max-in-flight}; kept in Redis until
     * {@link #clearMaxInFlight}. Jobs already in flight run to their end (a lower cap only holds
     * the next takes back).
     */
    public TopicFlow setMaxInFlight(String topic, int max) {
        JobValidator.checkTopic("topic", topic);
        checkMaxInFlight("max", max, store.partitionCount());
        return view(topic, store.setMaxInFlight(topic, max));
    }

    /** Removes the cap set by {@link #setMaxInFlight}: the configuration's (if any) applies again. */
    public TopicFlow clearMaxInFlight(String topic) {
        JobValidator.checkTopic("topic", topic);
        return view(topic, store.clearMaxInFlight(topic));
    }

    /** The rule for a concurrency cap, for callers that read one from input. */
    public static void checkMaxInFlight(String field, long max, int partitions) {
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
    public static String brokenMaxInFlight(long max, int partitions) {
        if (max < Math.max(1, partitions) || max > MAX_IN_FLIGHT) {
            return "must be an integer from " + Math.max(1, partitions) + " to " + MAX_IN_FLIGHT + ", not " + max
                    + (partitions > 1 && max >= 1 && max < partitions ? " (delayq.partitions is " + partitions
                            + ": each partition runs its share of the cap, at least one job; to stop a topic, pause it)"
                            : " (to stop a topic, pause it)");
        }
        return null;
    }

    /** The topic's flow control as it is now. */
    public TopicFlow flow(String topic) {
        JobValidator.checkTopic("topic", topic);
        return flows(List.of(topic)).get(topic);
    }

    /** The flow control of several topics, in their order (one Redis round trip). */
    public Map<String, TopicFlow> flows(Collection<String> topics) {
        return flows(topics, Map.of());
    }

    /**
     * As {@link #flows(Collection)}, with the jobs in flight of the topics the caller has just
     * counted (a topic listing): not read again.
     */
    public Map<String, TopicFlow> flows(Collection<String> topics, Map<String, Long> inflightKnown) {
        Map<String, TopicFlow> out = new LinkedHashMap<>();
        store.flows(topics, inflightKnown).forEach((topic, settings) -> out.put(topic, view(topic, settings)));
        return out;
    }

    /** The rule for a rate limit, for callers that read one from input. */
    public static void checkRate(String field, double perSecond) {
        if (!(perSecond >= MIN_RATE) || perSecond > MAX_RATE) {
            throw new InvalidJobException(field, field + " must be a number of jobs per second from " + MIN_RATE
                    + " to " + (long) MAX_RATE + " (to stop a topic, pause it)");
        }
    }

    private TopicFlow.MaxInFlight maxInFlight(String topic, FlowSettings s) {
        if (s.maxInFlight() != null) {
            return new TopicFlow.MaxInFlight(s.maxInFlight(), TopicFlow.Source.API, s.inflight());
        }
        java.util.OptionalInt configured = store.configuredMaxInFlight(topic);
        return configured.isPresent()
                ? new TopicFlow.MaxInFlight(configured.getAsInt(), TopicFlow.Source.CONFIG, s.inflight())
                : null;
    }

    private TopicFlow view(String topic, FlowSettings s) {
        TopicFlow.RateLimit rate = null;
        if (s.rateLimit() != null) {
            rate = new TopicFlow.RateLimit(s.rateLimit(), TopicFlow.Source.API);
        } else {
            OptionalDouble configured = store.configuredRateLimit(topic);
            if (configured.isPresent()) {
                rate = new TopicFlow.RateLimit(configured.getAsDouble(), TopicFlow.Source.CONFIG);
            }
        }
        return new TopicFlow(topic, s.paused(), s.paused() ? Instant.ofEpochMilli(s.pausedAt()) : null, rate,
                s.held() ? Instant.ofEpochMilli(s.heldUntil()) : null, maxInFlight(topic, s));
    }
}
