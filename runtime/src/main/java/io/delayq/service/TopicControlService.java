package io.delayq.service;

import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;

import jakarta.enterprise.context.ApplicationScoped;

import io.delayq.core.ForgetResult;
import io.delayq.core.JobValidator;
import io.delayq.core.TopicControl;
import io.delayq.core.TopicFlow;
import io.delayq.ops.ReplicaRegistry;
import io.delayq.store.FlowSettings;
import io.delayq.store.TopicAdmin;

/**
 * {@link TopicControl} over the store's {@link TopicAdmin}: each rule checked first, a topic served
 * by a live replica ({@link ReplicaRegistry}) never forgotten, and the settings read back as a
 * {@link TopicFlow} (the API's, else the configuration's).
 */
@ApplicationScoped
public class TopicControlService implements TopicControl {
    private final TopicAdmin store;
    private final ReplicaRegistry replicas;

    public TopicControlService(TopicAdmin store, ReplicaRegistry replicas) {
        this.store = store;
        this.replicas = replicas;
    }

    @Override
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

    @Override
    public TopicFlow pause(String topic) {
        JobValidator.checkTopic("topic", topic);
        return view(topic, store.pause(topic));
    }

    @Override
    public TopicFlow resume(String topic) {
        JobValidator.checkTopic("topic", topic);
        return view(topic, store.resume(topic));
    }

    @Override
    public TopicFlow setRateLimit(String topic, double perSecond) {
        JobValidator.checkTopic("topic", topic);
        TopicControl.checkRate("perSecond", perSecond);
        return view(topic, store.setRateLimit(topic, perSecond));
    }

    @Override
    public TopicFlow clearRateLimit(String topic) {
        JobValidator.checkTopic("topic", topic);
        return view(topic, store.clearRateLimit(topic));
    }

    @Override
    public TopicFlow setGroupRateLimit(String topic, double perSecond) {
        JobValidator.checkTopic("topic", topic);
        TopicControl.checkRate("perSecond", perSecond);
        return view(topic, store.setGroupRateLimit(topic, perSecond));
    }

    @Override
    public TopicFlow clearGroupRateLimit(String topic) {
        JobValidator.checkTopic("topic", topic);
        return view(topic, store.clearGroupRateLimit(topic));
    }

    @Override
    public TopicFlow setMaxInFlight(String topic, int max) {
        JobValidator.checkTopic("topic", topic);
        TopicControl.checkMaxInFlight("max", max, store.partitionCount());
        return view(topic, store.setMaxInFlight(topic, max));
    }

    @Override
    public TopicFlow clearMaxInFlight(String topic) {
        JobValidator.checkTopic("topic", topic);
        return view(topic, store.clearMaxInFlight(topic));
    }

    @Override
    public Map<String, TopicFlow> flows(Collection<String> topics, Map<String, Long> inflightKnown) {
        Map<String, TopicFlow> out = new LinkedHashMap<>();
        store.flows(topics, inflightKnown).forEach((topic, settings) -> out.put(topic, view(topic, settings)));
        return out;
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

    private TopicFlow.RateLimit groupRateLimit(String topic, FlowSettings s) {
        if (s.groupRateLimit() != null) {
            return new TopicFlow.RateLimit(s.groupRateLimit(), TopicFlow.Source.API);
        }
        OptionalDouble configured = store.configuredGroupRateLimit(topic);
        return configured.isPresent() ? new TopicFlow.RateLimit(configured.getAsDouble(), TopicFlow.Source.CONFIG) : null;
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
                s.held() ? Instant.ofEpochMilli(s.heldUntil()) : null, maxInFlight(topic, s), groupRateLimit(topic, s));
    }
}
