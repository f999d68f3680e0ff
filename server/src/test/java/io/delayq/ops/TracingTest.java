package io.delayq.ops;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.logging.Handler;
import java.util.logging.LogRecord;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.ObservesAsync;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;

import org.jboss.logging.Logger;
import org.jboss.logmanager.ExtLogRecord;
import org.junit.jupiter.api.Test;

import io.delayq.core.Job;
import io.delayq.core.JobRequest;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.delayq.support.FixedPort;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * Traces from enqueue to observer (quarkus-opentelemetry is in the server), with spans caught by
 * an in-memory exporter, and the job in the logging context while its observer runs.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(TracingTest.Traced.class)
class TracingTest {
    static final String TOPIC = "traced";
    static final String FLAKY = "traced-flaky";
    static final String HTTP = "traced-http";
    static final String ASYNC = "traced-async";
    private static final Logger OBSERVER_LOG = Logger.getLogger("io.delayq.test.TracedObserver");

    /** Tracing on, exported at once; an HTTP-target topic pointed at this application itself. */
    public static class Traced implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            int port = FixedPort.forRun("tracing");
            return Map.of("quarkus.otel.sdk.disabled", "false",
                    "quarkus.otel.bsp.schedule.delay", "20ms",
                    "quarkus.http.test-port", Integer.toString(port),
                    "delayq.topics." + HTTP + ".http.url", "http://127.0.0.1:" + port + "/test-target",
                    "delayq.topics." + FLAKY + ".retry.initial", "50ms");
        }
    }

    /** Spans of the application, kept in memory (it replaces the OTLP exporter). */
    @ApplicationScoped
    public static class Exporter {
        @Produces
        @Singleton
        InMemorySpanExporter spans() {
            return InMemorySpanExporter.create();
        }
    }

    /** The observers of this test: one logs (for the MDC), one fails its first attempt. */
    @ApplicationScoped
    public static class TracedObservers {
        static final Map<String, Integer> FAILURES_LEFT = new ConcurrentHashMap<>();

        void traced(@Observes @JobTopic(TOPIC) Job job) {
            OBSERVER_LOG.infof("running %s", job.id());
        }

        void tracedAsync(@ObservesAsync @JobTopic(ASYNC) Job job) {
            OBSERVER_LOG.infof("running %s", job.id());
        }

        void flaky(@Observes @JobTopic(FLAKY) Job job) {
            if (FAILURES_LEFT.merge(job.id(), -1, Integer::sum) >= 0) {
                throw new IllegalStateException("first attempt fails");
            }
        }
    }

    /** The HTTP target: records the traceparent each delivery came with. */
    @Path("/test-target")
    public static class Target {
        static final Map<String, String> TRACEPARENTS = new ConcurrentHashMap<>();

        @POST
        public void deliver(@HeaderParam("X-Delayq-Job-Id") String id, @HeaderParam("traceparent") String traceparent,
                String body) {
            TRACEPARENTS.put(id, traceparent == null ? "" : traceparent);
        }
    }

    @Inject
    Jobs jobs;

    @Inject
    Tracer tracer;

    @Inject
    InMemorySpanExporter spans;

    /** Enqueues a job inside a span of the caller's; returns that span (ended). */
    private Span enqueueInSpan(JobRequest request) {
        Span caller = tracer.spanBuilder("caller").startSpan();
        try (Scope s = caller.makeCurrent()) {
            jobs.schedule(request);
        } finally {
            caller.end();
        }
        return caller;
    }

    private List<SpanData> runSpans(String topic, String id) {
        return spans.getFinishedSpanItems().stream()
                .filter(s -> s.getName().equals("delayq.run " + topic))
                .filter(s -> id.equals(s.getAttributes().get(io.opentelemetry.api.common.AttributeKey.stringKey("delayq.job.id"))))
                .toList();
    }

    @Test
    void aJobEnqueuedInsideASpanRunsInAChildSpanOfTheSameTrace() {
        String id = Topics.fresh("job");
        Span caller = enqueueInSpan(JobRequest.topic(TOPIC).id(id));

        await().atMost(Duration.ofSeconds(10)).until(() -> runSpans(TOPIC, id).size() == 1);
        SpanData run = runSpans(TOPIC, id).get(0);
        assertEquals(caller.getSpanContext().getTraceId(), run.getTraceId(), "same trace as the enqueue");
        assertEquals(caller.getSpanContext().getSpanId(), run.getParentSpanId(), "a child of the enqueue's span");
        var a = run.getAttributes();
        assertEquals(TOPIC, a.get(io.opentelemetry.api.common.AttributeKey.stringKey("delayq.topic")));
        assertEquals(1L, a.get(io.opentelemetry.api.common.AttributeKey.longKey("delayq.attempt")));
        assertNotNull(a.get(io.opentelemetry.api.common.AttributeKey.longKey("delayq.lateness_ms")));
    }

    @Test
    void aRetryStaysInTheTraceOfTheEnqueue() {
        String id = Topics.fresh("retried");
        TracedObservers.FAILURES_LEFT.put(id, 1);
        Span caller = enqueueInSpan(JobRequest.topic(FLAKY).id(id));

        await().atMost(Duration.ofSeconds(10)).until(() -> runSpans(FLAKY, id).size() == 2);
        List<SpanData> runs = runSpans(FLAKY, id);
        for (SpanData run : runs) {
            assertEquals(caller.getSpanContext().getTraceId(), run.getTraceId());
            assertEquals(caller.getSpanContext().getSpanId(), run.getParentSpanId());
        }
        assertEquals(List.of(1L, 2L), runs.stream()
                .map(r -> r.getAttributes().get(io.opentelemetry.api.common.AttributeKey.longKey("delayq.attempt")))
                .sorted().toList());
        assertTrue(runs.stream().anyMatch(r -> r.getStatus().getStatusCode() == io.opentelemetry.api.trace.StatusCode.ERROR),
                "the failed attempt's span is marked failed");
    }

    @Test
    void anHttpTargetReceivesTheTraceparentOfTheJobsTrace() {
        String id = Topics.fresh("http");
        Span caller = enqueueInSpan(JobRequest.topic(HTTP).id(id));

        await().atMost(Duration.ofSeconds(10)).until(() -> Target.TRACEPARENTS.containsKey(id));
        String traceparent = Target.TRACEPARENTS.get(id);
        assertTrue(traceparent.startsWith("00-" + caller.getSpanContext().getTraceId() + "-"),
                "traceparent " + traceparent + " should be in trace " + caller.getSpanContext().getTraceId());
        await().atMost(Duration.ofSeconds(10)).until(() -> runSpans(HTTP, id).size() == 1);
        assertEquals(runSpans(HTTP, id).get(0).getSpanId(), traceparent.split("-")[2],
                "the target's parent is the attempt's span");
    }

    @Test
    void theObserversLogRecordsCarryTheirOwnJobInTheirMdc() {
        Queue<ExtLogRecord> records = new ConcurrentLinkedQueue<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                // The MDC is read on the logging thread: copy it before the record leaves it.
                ((ExtLogRecord) r).copyAll();
                records.add((ExtLogRecord) r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger category = java.util.logging.Logger.getLogger("io.delayq.test.TracedObserver");
        category.addHandler(capture);
        try {
            // Synchronous and asynchronous observers, two rounds: a job id left behind on a pooled
            // thread by the first round would show up on the second round's records.
            List<String> ids = new java.util.ArrayList<>();
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < 10; i++) {
                    String sync = Topics.fresh("logged");
                    String async = Topics.fresh("logged-async");
                    ids.add(sync);
                    ids.add(async);
                    jobs.schedule(JobRequest.topic(TOPIC).id(sync));
                    jobs.schedule(JobRequest.topic(ASYNC).id(async));
                }
                await().atMost(Duration.ofSeconds(10)).until(() -> ids.stream().allMatch(id -> records.stream()
                        .anyMatch(r -> r.getFormattedMessage().equals("running " + id))));
            }
            for (String id : ids) {
                ExtLogRecord r = records.stream().filter(x -> x.getFormattedMessage().equals("running " + id))
                        .findFirst().orElseThrow();
                assertEquals(id, r.getMdc("delayq.jobId"), "the record of " + id + " on " + r.getThreadName());
                assertEquals(id.startsWith("logged-async") ? ASYNC : TOPIC, r.getMdc("delayq.topic"));
                assertEquals("1", r.getMdc("delayq.attempt"));
            }
        } finally {
            category.removeHandler(capture);
        }
    }

    @Test
    void aTracedJobsRecordStaysReadableByThePreviousRelease() {
        String id = Topics.fresh("format");
        enqueueInSpan(JobRequest.topic(TOPIC).id(id).delay(Duration.ofHours(1)));
        try (io.delayq.dev.Resp redis = RedisTestResource.resp()) {
            String record = redis.str("HGET", io.delayq.support.Topics.keys(TOPIC) + "jobs", id);
            // runAt alone in the first field, the context inside the lastError field: a release
            // without tracing parses it (it shows as error text), it never fails to.
            assertTrue(record.matches("(?s)[0-9a-z]+,0,0,\u001e[0-9a-f]{50}\n.*"), record);
            jobs.cancel(TOPIC, id);
        }
    }

    @Test
    void aJobEnqueuedOutsideAnyTraceStartsItsOwn() {
        String id = Topics.fresh("untraced");
        jobs.schedule(JobRequest.topic(TOPIC).id(id));
        await().atMost(Duration.ofSeconds(10)).until(() -> runSpans(TOPIC, id).size() == 1);
        assertTrue(!runSpans(TOPIC, id).get(0).getParentSpanContext().isValid(), "a root span");
    }
}
