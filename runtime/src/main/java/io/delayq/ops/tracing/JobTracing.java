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

    /**
     * The compact context ({@link #currentContext()}'s form) of a W3C {@code traceparent} header,
     * empty when it is absent or not a valid version-00 one (all-zero ids are invalid).
     */
    static String compact(String traceparent) {
        if (traceparent == null) {
            return "";
        }
        String t = traceparent.trim();
        if (t.length() < 55 || !t.startsWith("00-") || t.charAt(35) != '-' || t.charAt(52) != '-'
                || (t.length() > 55 && t.charAt(55) != '-')) {
            return "";
        }
        String trace = t.substring(3, 35);
        String span = t.substring(36, 52);
        String flags = t.substring(53, 55);
        if (!hex(trace) || !hex(span) || !hex(flags) || trace.equals("0".repeat(32)) || span.equals("0".repeat(16))) {
            return "";
        }
        return trace + span + flags;
    }

    /**
     * The context a job is stored with: the current span's when it is in the trace the request
     * came with (tracing on: the server span is its child) or when no header came; else the
     * header's own. With nothing exported (the standalone server's default) there is no server
     * span of the caller's trace, and the job would lose it: the target got a new trace id.
     */
    static String forEnqueue(String current, String traceparent) {
        String incoming = compact(traceparent);
        if (incoming.isEmpty() || (!current.isEmpty() && current.regionMatches(0, incoming, 0, 32))) {
            return current;
        }
        return incoming;
    }

    /**
     * A {@code traceparent} in the enqueue's trace with a new span id, for an attempt no tracer
     * made a span for: the target's spans still join the caller's trace. Null without a context.
     */
    static String passThrough(String enqueueContext) {
        if (enqueueContext == null || enqueueContext.length() != 32 + 16 + 2) {
            return null;
        }
        long id;
        do {
            id = java.util.concurrent.ThreadLocalRandom.current().nextLong();
        } while (id == 0);
        return "00-" + enqueueContext.substring(0, 32) + "-" + String.format("%016x", id) + "-"
                + enqueueContext.substring(48);
    }

    /** The attempt span of no tracing, carrying the enqueue's trace on to HTTP targets. */
    static AttemptSpan passThroughSpan(String enqueueContext) {
        String traceparent = passThrough(enqueueContext);
        if (traceparent == null) {
            return NONE;
        }
        return new AttemptSpan() {
            @Override
            public Scope makeCurrent() {
                return () -> {
                };
            }

            @Override
            public String traceparent() {
                return traceparent;
            }

            @Override
            public void end(Throwable error) {
            }
        };
    }

    /** Lower-case hex only, as W3C Trace Context requires. */
    private static boolean hex(String s) {
        return s.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
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
