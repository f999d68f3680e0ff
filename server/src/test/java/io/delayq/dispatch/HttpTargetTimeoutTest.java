package io.delayq.dispatch;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.inject.Inject;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;

import org.junit.jupiter.api.Test;

import io.delayq.core.CancelOutcome;
import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.support.FixedPort;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.vertx.core.http.HttpServerRequest;

/**
 * An HTTP-target attempt that timed out is not retried while the target may still be running
 * it: the retry waits at least the timeout again, even when the backoff is shorter. And the cancel
 * of a job whose call is in flight aborts the call (its connection closed) long before its
 * timeout, and the job is not called again.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(HttpTargetTimeoutTest.SlowTarget.class)
class HttpTargetTimeoutTest {
    static final String TOPIC = "slow-http";
    /** Its target never answers; the call's timeout is the default (30 s). */
    static final String CANCELLED = "cancel-http";

    /** The target is this application itself (a resource below), on a port fixed for the run. */
    public static class SlowTarget implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            int port = FixedPort.forRun("slow-target");
            return Map.of("quarkus.http.test-port", Integer.toString(port),
                    "delayq.topics." + TOPIC + ".http.url", "http://127.0.0.1:" + port + "/slow-target",
                    "delayq.topics." + TOPIC + ".http.timeout", "600ms",
                    "delayq.topics." + TOPIC + ".retry.initial", "10ms",
                    "delayq.topics." + CANCELLED + ".http.url", "http://127.0.0.1:" + port + "/never-answers");
        }
    }

    /** Answers the first call after 1.5 s (past the 600 ms timeout), later ones at once. */
    @Path("/slow-target")
    public static class Target {
        static final List<Long> CALLS = new CopyOnWriteArrayList<>();

        @POST
        public void deliver(String body) throws InterruptedException {
            CALLS.add(System.nanoTime());
            if (CALLS.size() == 1) {
                Thread.sleep(1500);
            }
        }
    }

    /** Never answers; notes each call's job id when it comes, and again when its connection closes. */
    @Path("/never-answers")
    public static class NeverAnswers {
        static final List<String> CALLED = new CopyOnWriteArrayList<>();
        static final List<String> CLOSED = new CopyOnWriteArrayList<>();

        @POST
        public io.smallrye.mutiny.Uni<Void> deliver(String body, @jakarta.ws.rs.core.Context HttpServerRequest request) {
            String id = request.getHeader("X-Delayq-Job-Id");
            CALLED.add(id);
            request.connection().closeHandler(v -> CLOSED.add(id));
            return io.smallrye.mutiny.Uni.createFrom().nothing();
        }
    }

    @Inject
    Jobs jobs;

    @Test
    void theCancelOfAJobWhoseCallIsInFlightAbortsTheCall() {
        String id = Topics.fresh("cancel-http");
        jobs.schedule(JobRequest.topic(CANCELLED).id(id));
        await().atMost(Duration.ofSeconds(15)).until(() -> NeverAnswers.CALLED.contains(id));
        assertEquals(CancelOutcome.CANCELLING, jobs.cancel(CANCELLED, id));
        // Well before the call's own timeout (30 s): the connection closed by the cancel.
        await().atMost(Duration.ofSeconds(8)).until(() -> NeverAnswers.CLOSED.contains(id));
        await().atMost(Duration.ofSeconds(15)).until(() -> jobs.get(CANCELLED, id).isEmpty());
        assertEquals(1, NeverAnswers.CALLED.stream().filter(id::equals).count(), "not called again");
    }

    @Test
    void aTimedOutCallIsRetriedNoSoonerThanTheTimeoutAfterItTimedOut() {
        long scheduled = System.nanoTime();
        jobs.schedule(JobRequest.topic(TOPIC).id(Topics.fresh("slow")));
        await().atMost(Duration.ofSeconds(15)).until(() -> Target.CALLS.size() >= 2);
        long retryMs = (Target.CALLS.get(1) - scheduled) / 1_000_000;
        // The first call is sent at s >= 0 and times out at s + 600 ms; the retry waits 600 ms
        // more: s + 1200 ms. The backoff alone (10 ms) would give about s + 610 ms. Measured from
        // the enqueue, not from the first call's arrival, which a busy machine can delay.
        assertTrue(retryMs >= 1_200, "retry " + retryMs + " ms after the enqueue; expected at least 1200 ms");
    }
}
