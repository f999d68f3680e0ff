package io.delayq.ops.tracing;

import jakarta.inject.Singleton;

import io.quarkus.arc.DefaultBean;

/** Tracing off: the service has no quarkus-opentelemetry (trace context is still passed on). */
@DefaultBean
@Singleton
public class NoJobTracing implements JobTracing {

    @Override
    public String currentContext() {
        return "";
    }

    @Override
    public AttemptSpan startAttempt(String topic, String jobId, int attempt, long latenessMs, String enqueueContext) {
        // Nothing traced here, but the caller's trace still reaches the job's HTTP target.
        return JobTracing.passThroughSpan(enqueueContext);
    }
}
