package io.delayq.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import io.delayq.ops.tracing.JobTracing;
import io.delayq.ops.tracing.NoJobTracing;

/** The trace context a job keeps from its enqueue's traceparent, and hands on with no tracer at all. */
class JobTracingTest {
    private static final String TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String HEADER = "00-" + TRACE + "-00f067aa0ba902b7-01";

    @Test
    void onlyAValidVersion00TraceparentIsTaken() {
        assertEquals(TRACE + "00f067aa0ba902b7" + "01", JobTracing.compact(HEADER));
        assertEquals(TRACE + "00f067aa0ba902b7" + "01", JobTracing.compact(HEADER + "-future-fields"));
        for (String bad : new String[] { null, "", "00-not-a-trace-01", "01-" + TRACE + "-00f067aa0ba902b7-01",
                "00-" + "0".repeat(32) + "-00f067aa0ba902b7-01", "00-" + TRACE + "-0000000000000000-01",
                "00-" + TRACE.toUpperCase() + "-00f067aa0ba902b7-01", HEADER + "x" }) {
            assertEquals("", JobTracing.compact(bad), String.valueOf(bad));
        }
    }

    @Test
    void theCurrentSpanWinsWhenItIsInTheIncomingTraceOrNoneCame() {
        String child = TRACE + "1111111111111111" + "01";
        String other = "a".repeat(32) + "2222222222222222" + "01";
        assertEquals(child, JobTracing.forEnqueue(child, HEADER), "tracing on: the server span, a child of the caller's");
        assertEquals(other, JobTracing.forEnqueue(other, null), "no header: the current span");
        assertEquals(JobTracing.compact(HEADER), JobTracing.forEnqueue("", HEADER), "nothing current: the caller's");
        assertEquals(JobTracing.compact(HEADER), JobTracing.forEnqueue(other, HEADER),
                "a span of another trace (nothing propagated it): the caller's");
    }

    @Test
    void withoutATracerAnAttemptHandsOnTheEnqueuesTraceWithANewSpanId() {
        String traceparent = new NoJobTracing().startAttempt("t", "j", 1, 0, JobTracing.compact(HEADER)).traceparent();
        String[] parts = traceparent.split("-");
        assertEquals(TRACE, parts[1]);
        assertTrue(parts[2].matches("[0-9a-f]{16}"), traceparent);
        assertNotEquals("00f067aa0ba902b7", parts[2]);
        assertEquals("01", parts[3]);
        assertNull(new NoJobTracing().startAttempt("t", "j", 1, 0, "").traceparent(), "no context, no header");
    }
}
