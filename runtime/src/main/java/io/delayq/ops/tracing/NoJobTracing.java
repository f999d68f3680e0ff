package io.delayq.ops.tracing;

import jakarta.inject.Singleton;

import io.quarkus.arc.DefaultBean;

/** Tracing off: the service has no quarkus-opentelemetry. */
@DefaultBean
@Singleton
public class NoJobTracing implements JobTracing {

    @Override
    public String currentContext() {
        return "";
    }

    @Override
    public AttemptSpan startAttempt(String topic, String jobId, int attempt, long latenessMs, String enqueueContext) {
        return NONE;
    }
}
