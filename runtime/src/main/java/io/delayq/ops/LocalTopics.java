package io.delayq.ops;

import java.util.Collections;
import java.util.Set;
import java.util.TreeSet;

import jakarta.enterprise.context.ApplicationScoped;

import io.delayq.core.DelayqConfig;
import io.delayq.dispatch.TopicRegistry;
import io.delayq.store.OwnTopics;

/**
 * The topics this replica keeps per-topic state for (meters, gauges, caches): those it serves
 * (an observer or an HTTP target) and those its configuration names ({@code delayq.topics.<t>.*},
 * the topic of a {@code delayq.schedules.<name>}). Any other topic name can come in a request,
 * so state kept for every one of them would grow without bound: their counts are summed under
 * {@link #OTHER}, and nothing is cached for them.
 */
@ApplicationScoped
public class LocalTopics implements OwnTopics {
    /** The meters' topic tag of every topic that is not local. */
    public static final String OTHER = "other";
    private final Set<String> topics;

    public LocalTopics(TopicRegistry registry, DelayqConfig config) {
        Set<String> all = new TreeSet<>(registry.handlers().keySet());
        all.addAll(config.topics().keySet());
        config.schedules().values().forEach(s -> all.add(s.topic()));
        this.topics = Collections.unmodifiableSet(all);
    }

    /** Whether this replica serves or configures the topic. */
    @Override
    public boolean contains(String topic) {
        return topics.contains(topic);
    }

    /** The local topics, sorted. */
    public Set<String> all() {
        return topics;
    }

    /** The topic tag of a meter counting the topic's jobs: the topic when local, else {@link #OTHER}. */
    public String tagOf(String topic) {
        return topics.contains(topic) ? topic : OTHER;
    }
}
