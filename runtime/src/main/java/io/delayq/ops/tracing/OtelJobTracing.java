package io.delayq.ops.tracing;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;

/**
 * Tracing with OpenTelemetry. Not a bean by itself (it must not even load in a service without
 * OpenTelemetry): the extension registers it when the service has quarkus-opentelemetry.
 * <p>
 * Each attempt's span is a child of the enqueue's span, not a new trace linked to it: whoever
 * follows a failure back from the observer lands in the request that scheduled the job, and the
 * observer's own spans and log lines sit under it. Retries and requeues keep the stored context,
 * so every attempt of a job is in the one trace (as siblings). The cost is long-lived traces for
 * long delays, which trace back-ends show fine.
 */
public class OtelJobTracing implements JobTracing {
    private static final int CONTEXT_LENGTH = 32 + 16 + 2;
    private final Tracer tracer;

    public OtelJobTracing(Tracer tracer) {
        this.tracer = tracer;
    }

    @Override
    public String currentContext() {
        SpanContext c = Span.current().getSpanContext();
        return c.isValid() ? c.getTraceId() + c.getSpanId() + c.getTraceFlags().asHex() : "";
    }

    @Override
    public AttemptSpan startAttempt(String topic, String jobId, int attempt, long latenessMs, String enqueueContext) {
        Context parent = Context.root();
        if (enqueueContext != null && enqueueContext.length() == CONTEXT_LENGTH) {
            SpanContext enqueue = SpanContext.createFromRemoteParent(enqueueContext.substring(0, 32),
                    enqueueContext.substring(32, 48), TraceFlags.fromHex(enqueueContext, 48), TraceState.getDefault());
            if (enqueue.isValid()) {
                parent = parent.with(Span.wrap(enqueue));
            }
        }
        Span span = tracer.spanBuilder("delayq.run " + topic).setParent(parent).setSpanKind(SpanKind.CONSUMER)
                .setAttribute("messaging.system", "delayq")
                .setAttribute("messaging.operation.type", "process")
                .setAttribute("messaging.destination.name", topic)
                .setAttribute("messaging.message.id", jobId)
                .setAttribute("delayq.job.id", jobId)
                .setAttribute("delayq.topic", topic)
                .setAttribute("delayq.attempt", attempt)
                .setAttribute("delayq.lateness_ms", latenessMs)
                .startSpan();
        return new OtelAttempt(span);
    }

    private record OtelAttempt(Span span) implements AttemptSpan {
        @Override
        public Scope makeCurrent() {
            io.opentelemetry.context.Scope scope = span.makeCurrent();
            return scope::close;
        }

        @Override
        public String traceparent() {
            SpanContext c = span.getSpanContext();
            return c.isValid() ? "00-" + c.getTraceId() + "-" + c.getSpanId() + "-" + c.getTraceFlags().asHex() : null;
        }

        @Override
        public void end(Throwable error) {
            if (error != null) {
                span.recordException(error);
                span.setStatus(StatusCode.ERROR, error.getClass().getSimpleName());
            }
            span.end();
        }
    }
}
