package io.delayq.dispatch;

import io.quarkus.runtime.annotations.RecordableConstructor;

/**
 * One {@code @Observes @JobTopic("t") Job} observer method of the application, found by the
 * extension at build time (see {@code io.delayq.deployment.DelayqProcessor}) and recorded for
 * runtime, so a replica knows the topics it serves without scanning anything at start-up.
 */
public final class TopicObserver {
    private final String topic;
    private final String declaringClass;
    private final String method;
    private final boolean async;

    @RecordableConstructor
    public TopicObserver(String topic, String declaringClass, String method, boolean async) {
        this.topic = topic;
        this.declaringClass = declaringClass;
        this.method = method;
        this.async = async;
    }

    public String getTopic() {
        return topic;
    }

    public String getDeclaringClass() {
        return declaringClass;
    }

    public String getMethod() {
        return method;
    }

    /** True for {@code @ObservesAsync}. */
    public boolean isAsync() {
        return async;
    }

    /** {@code com.acme.OrderTimeouts#close}, as logs and the Dev UI show it. */
    public String describe() {
        return declaringClass + "#" + method + (async ? " (async)" : "");
    }
}
