package io.delayq.deployment;

import io.quarkus.arc.processor.InvokerInfo;
import io.quarkus.builder.item.MultiBuildItem;

/**
 * A {@code @JobTopic} observer of the application as ArC kept it; a reactive one (returning
 * {@code Uni} or {@code CompletionStage}) comes with the invoker built for it.
 */
final class TopicObserverBuildItem extends MultiBuildItem {
    final String topic;
    final String declaringClass;
    final String method;
    final boolean async;
    /** Null for an observer notified through CDI events. */
    final InvokerInfo invoker;
    final int eventPosition;
    final int parameterCount;

    TopicObserverBuildItem(String topic, String declaringClass, String method, boolean async, InvokerInfo invoker,
            int eventPosition, int parameterCount) {
        this.topic = topic;
        this.declaringClass = declaringClass;
        this.method = method;
        this.async = async;
        this.invoker = invoker;
        this.eventPosition = eventPosition;
        this.parameterCount = parameterCount;
    }
}
