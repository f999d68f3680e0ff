package io.delayq.dispatch;

import java.lang.annotation.Annotation;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Event;
import jakarta.enterprise.inject.Any;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.delayq.core.JobValidator;
import io.delayq.http.HttpTargetHandler;
import io.quarkus.arc.Arc;
import io.quarkus.arc.InjectableObserverMethod;
import io.quarkus.arc.impl.ArcContainerImpl;

/**
 * The topics this replica serves, each with the handler that runs its jobs: a topic is served
 * when a CDI observer of {@code @JobTopic("t") Job} exists or {@code delayq.topics.t.http.url}
 * is set. Jobs of other topics stay in Redis, untouched, for replicas that serve them.
 */
@ApplicationScoped
public class TopicRegistry {
    private static final Logger LOG = Logger.getLogger(TopicRegistry.class);
    private final Map<String, JobHandler> handlers;

    public TopicRegistry(@Any Event<Job> events, DelayqConfig config) {
        Map<String, boolean[]> kinds = new TreeMap<>(); // topic -> {sync, async}
        // ArC knows every observer method at build time; its container lists them without reflection.
        for (InjectableObserverMethod<?> observer : ((ArcContainerImpl) Arc.container()).getObservers()) {
            if (!Job.class.equals(observer.getObservedType())) {
                continue;
            }
            String topic = null;
            for (Annotation q : observer.getObservedQualifiers()) {
                if (q instanceof JobTopic t) {
                    topic = t.value();
                }
            }
            if (topic == null) {
                LOG.warnf("observer of Job without @JobTopic in %s is ignored: it would receive every topic's jobs",
                        observer.getBeanClass().getName());
                continue;
            }
            JobValidator.checkTopic("@JobTopic", topic);
            kinds.computeIfAbsent(topic, t -> new boolean[2])[observer.isAsync() ? 1 : 0] = true;
        }
        Map<String, JobHandler> map = new LinkedHashMap<>();
        kinds.forEach((topic, k) -> map.put(topic,
                new CdiJobHandler(events.select(JobTopic.Literal.of(topic)), k[0], k[1])));
        config.topics().forEach((topic, t) -> t.http().url().ifPresent(url -> {
            JobValidator.checkTopic("delayq.topics", topic);
            if (map.containsKey(topic)) {
                throw new IllegalStateException("topic " + topic + " has both an observer and an HTTP target");
            }
            map.put(topic, new HttpTargetHandler(url, t.http().timeout()));
        }));
        this.handlers = Collections.unmodifiableMap(new TreeMap<>(map));
    }

    /** Served topics and their handlers, sorted by topic. */
    public Map<String, JobHandler> handlers() {
        return handlers;
    }

    public boolean serves(String topic) {
        return handlers.containsKey(topic);
    }
}
