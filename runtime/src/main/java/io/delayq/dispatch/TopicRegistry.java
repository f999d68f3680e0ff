package io.delayq.dispatch;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Event;
import jakarta.enterprise.inject.Any;

import io.delayq.core.DelayqConfig;
import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.delayq.core.JobValidator;
import io.delayq.http.HttpTargetHandler;
import io.delayq.http.RequestSigner;
import io.quarkus.tls.TlsConfiguration;
import io.quarkus.tls.TlsConfigurationRegistry;
import io.vertx.core.Vertx;

/**
 * The topics this replica serves, each with the handler that runs its jobs: a topic is served
 * when a CDI observer of {@code @JobTopic("t") Job} exists or {@code delayq.topics.t.http.url}
 * is set. Jobs of other topics stay in Redis, untouched, for replicas that serve them. The
 * observers were found at build time ({@link TopicObservers}): those that return nothing are
 * notified through CDI events ({@link CdiJobHandler}), a reactive one through its invoker
 * ({@link ReactiveJobHandler}).
 */
@ApplicationScoped
public class TopicRegistry {
    private final Map<String, JobHandler> handlers;
    private final Map<String, String> observers;

    public TopicRegistry(@Any Event<Job> events, DelayqConfig config, Vertx vertx, TlsConfigurationRegistry tls) {
        Map<String, boolean[]> kinds = new TreeMap<>(); // topic -> {sync, async}
        Map<String, String> describe = new TreeMap<>();
        Map<String, TopicObserver> reactive = new TreeMap<>();
        for (TopicObserver o : TopicObservers.all()) {
            if (o.isReactive()) {
                reactive.put(o.getTopic(), o); // alone on its topic: the build fails otherwise
            } else {
                kinds.computeIfAbsent(o.getTopic(), t -> new boolean[2])[o.isAsync() ? 1 : 0] = true;
            }
            describe.merge(o.getTopic(), o.describe(), (a, b) -> a + ", " + b);
        }
        this.observers = Collections.unmodifiableMap(describe);
        Map<String, JobHandler> map = new LinkedHashMap<>();
        kinds.forEach((topic, k) -> map.put(topic,
                new CdiJobHandler(events.select(JobTopic.Literal.of(topic)), k[0], k[1], describe.get(topic))));
        reactive.forEach((topic, o) -> map.put(topic, new ReactiveJobHandler(o, vertx)));
        // Every topic's keys checked at start-up, a topic without a target too (they sign its dead-job callbacks).
        config.topics().forEach((topic, t) -> RequestSigner.of(topic, t.http().signingKeys()));
        config.topics().forEach((topic, t) -> t.http().url().ifPresent(url -> {
            JobValidator.checkTopic("delayq.topics", topic);
            if (map.containsKey(topic)) {
                throw new IllegalStateException("topic " + topic + " has both an observer and an HTTP target");
            }
            Optional<TlsConfiguration> tlsConfig = TlsConfiguration.from(tls, t.http().tlsConfigurationName());
            if (t.http().tlsConfigurationName().isPresent() && tlsConfig.isEmpty()) {
                throw new IllegalStateException("delayq.topics." + topic + ".http.tls-configuration-name: no TLS configuration "
                        + "named " + t.http().tlsConfigurationName().get() + " (quarkus.tls." + t.http().tlsConfigurationName().get()
                        + ".*)");
            }
            HttpTargetHandler target = new HttpTargetHandler(vertx, url, t.http().timeout(), t.http().maxConnections(),
                    t.http().h2c(), tlsConfig.orElse(null), RequestSigner.of(topic, t.http().signingKeys()).orElse(null),
                    maxRetryAfter(topic, t.http().maxRetryAfter(), config.horizon()));
            // A topic that keeps results keeps its target's answers (at most a payload's size each).
            if (t.resultRetention().filter(d -> d.toMillis() > 0).isPresent()) {
                target.keepingResults(config.api().maxPayloadBytes());
            }
            map.put(topic, target);
        }));
        this.handlers = Collections.unmodifiableMap(new TreeMap<>(map));
    }

    /**
     * The longest a topic's target may hold it: {@code http.max-retry-after}, which the start
     * refuses beyond {@code delayq.horizon}; unset, an hour or the horizon, the shorter. A hold
     * is also the snooze of the job that was told "not now", and a snooze beyond the horizon
     * fails the job for good (as a job could not be enqueued that far ahead): with a longer cap,
     * a target's long Retry-After would send its job to the dead set while the topic waits.
     */
    static java.time.Duration maxRetryAfter(String topic, Optional<java.time.Duration> set, java.time.Duration horizon) {
        if (set.isEmpty()) {
            java.time.Duration cap = HttpTargetHandler.DEFAULT_MAX_RETRY_AFTER;
            return cap.compareTo(horizon) > 0 ? horizon : cap;
        }
        if (set.get().compareTo(horizon) > 0) {
            throw new IllegalStateException("delayq.topics." + topic + ".http.max-retry-after (" + set.get()
                    + ") must not be longer than delayq.horizon (" + horizon + "): a Retry-After held that long would"
                    + " snooze its job past the horizon, which fails the job for good");
        }
        return set.get();
    }

    /** Served topics and their handlers, sorted by topic. */
    public Map<String, JobHandler> handlers() {
        return handlers;
    }

    /** For a topic served by CDI observers: their {@code class#method}; null otherwise. */
    public String observerOf(String topic) {
        return observers.get(topic);
    }

    public boolean serves(String topic) {
        return handlers.containsKey(topic);
    }
}
