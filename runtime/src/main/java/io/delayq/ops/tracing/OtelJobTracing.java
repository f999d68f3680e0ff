package io.delayq.ops.tracing;

import org.jboss.logging.Logger;

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
    private static final Logger LOG = Logger.getLogger(OtelJobTracing.class);
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

    /** Never throws: a job runs whatever its stored context holds (with no parent, at worst). */
    @Override
    public AttemptSpan startAttempt(String topic, String jobId, int attempt, long latenessMs, String enqueueContext) {
        try {
            Span span = start(topic, jobId, attempt, latenessMs, enqueueContext);
            // A tracer that makes no valid span (OpenTelemetry's no-op): the enqueue's trace goes on.
            return span.getSpanContext().isValid() ? new OtelAttempt(span) : JobTracing.passThroughSpan(enqueueContext);
        } catch (RuntimeException e) {
            LOG.debugf(e, "no span for job %s/%s", topic, jobId);
            return JobTracing.passThroughSpan(enqueueContext);
        }
    }

    private Span start(String topic, String jobId, int attempt, long latenessMs, String enqueueContext) {
        Context parent = Context.root();
        if (enqueueContext != null && enqueueContext.length() == CONTEXT_LENGTH) {
            SpanContext enqueue = SpanContext.createFromRemoteParent(enqueueContext.substring(0, 32),
                    enqueueContext.substring(32, 48), TraceFlags.fromHex(enqueueContext, 48), TraceState.getDefault());
            if (enqueue.isValid()) {
                parent = parent.with(Span.wrap(enqueue));
            }
        }
        return tracer.spanBuilder("delayq.run " + topic).setParent(parent).setSpanKind(SpanKind.CONSUMER)
                .setAttribute("messaging.system", "delayq")
                .setAttribute("messaging.operation.type", "process")
                .setAttribute("messaging.destination.name", topic)
                .setAttribute("messaging.message.id", jobId)
                .setAttribute("delayq.job.id", jobId)
                .setAttribute("delayq.topic", topic)
                .setAttribute("delayq.attempt", attempt)
                .setAttribute("delayq.lateness_ms", latenessMs)
                .startSpan();
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

        /** Never throws: the outcome of the job is recorded after this, whatever tracing does. */
        @Override
        public void end(Throwable error) {
            try {
                if (error != null) {
                    span.setStatus(StatusCode.ERROR, error.getClass().getSimpleName());
                    span.recordException(error);
                }
            } catch (RuntimeException e) {
                LOG.debugf(e, "could not record the error on a span");
            } finally {
                span.end();
            }
        }
    }
}
