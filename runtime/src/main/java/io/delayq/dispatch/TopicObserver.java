package io.delayq.dispatch;

import jakarta.enterprise.invoke.Invoker;

import io.quarkus.runtime.RuntimeValue;
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
    private final RuntimeValue<Invoker<Object, Object>> invoker;
    private final int eventPosition;
    private final int parameterCount;

    /** An observer notified through CDI events ({@code void}: synchronous, or {@code @ObservesAsync}). */
    public TopicObserver(String topic, String declaringClass, String method, boolean async) {
        this(topic, declaringClass, method, async, null, 0, 0);
    }

    /**
     * @param invoker for a reactive observer (one that returns {@code Uni} or {@code CompletionStage}),
     *        the ArC invoker built for it at build time; {@code null} for the others
     * @param eventPosition the position of the {@code Job} parameter (the invoker looks the others up)
     * @param parameterCount how many parameters the method has
     */
    @RecordableConstructor
    public TopicObserver(String topic, String declaringClass, String method, boolean async,
            RuntimeValue<Invoker<Object, Object>> invoker, int eventPosition, int parameterCount) {
        this.topic = topic;
        this.declaringClass = declaringClass;
        this.method = method;
        this.async = async;
        this.invoker = invoker;
        this.eventPosition = eventPosition;
        this.parameterCount = parameterCount;
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

    /** The invoker of a reactive observer, {@code null} for an observer notified through CDI events. */
    public RuntimeValue<Invoker<Object, Object>> getInvoker() {
        return invoker;
    }

    public int getEventPosition() {
        return eventPosition;
    }

    public int getParameterCount() {
        return parameterCount;
    }

    /** True for an observer that returns {@code Uni} or {@code CompletionStage}: acked when it completes. */
    public boolean isReactive() {
        return invoker != null;
    }

    /** {@code com.acme.OrderTimeouts#close}, as logs and the Dev UI show it. */
    public String describe() {
        return declaringClass + "#" + method + (async ? " (async)" : isReactive() ? " (reactive)" : "");
    }
}
