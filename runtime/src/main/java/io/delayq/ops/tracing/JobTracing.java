package io.delayq.ops.tracing;

/**
 * Carries a job's trace from its enqueue to each of its attempts. With quarkus-opentelemetry in
 * the service, {@link OtelJobTracing} (registered by the extension at build time); without it,
 * {@link NoJobTracing}, which costs nothing and stores nothing.
 */
public interface JobTracing {

    /**
     * The W3C context of the current span, compact: trace id, span id and flags as 32 + 16 + 2
     * hex digits; empty when there is no (valid) current span. Stored with the job at enqueue.
     */
    String currentContext();

    /**
     * Starts the span of one attempt: a child of the enqueue's context when the job has one (so
     * the observer's own spans and logs sit in the request's trace), a new trace otherwise.
     */
    AttemptSpan startAttempt(String topic, String jobId, int attempt, long latenessMs, String enqueueContext);

    /** The span of one attempt. */
    interface AttemptSpan {
        /** Makes the span current on this thread until the returned scope is closed. */
        Scope makeCurrent();

        /** The {@code traceparent} header of this span, {@code null} when it is not traced. */
        String traceparent();

        /** Ends the span; a non-null error marks it failed. */
        void end(Throwable error);
    }

    /** A span made current; closing restores the previous one. */
    interface Scope extends AutoCloseable {
        @Override
        void close();
    }

    /** The attempt span of no tracing at all. */
    AttemptSpan NONE = new AttemptSpan() {
        @Override
        public Scope makeCurrent() {
            return () -> {
            };
        }

        @Override
        public String traceparent() {
            return null;
        }

        @Override
        public void end(Throwable error) {
        }
    };
}
