package io.delayq.dispatch;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.inject.Inject;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;

import org.junit.jupiter.api.Test;

import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.support.FixedPort;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * An HTTP-target attempt that timed out is not retried while the target may still be running
 * it: the retry waits at least the timeout again, even when the backoff is shorter.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(HttpTargetTimeoutTest.SlowTarget.class)
class HttpTargetTimeoutTest {
    static final String TOPIC = "slow-http";

    /** The target is this application itself (a resource below), on a port fixed for the run. */
    public static class SlowTarget implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            int port = FixedPort.forRun("slow-target");
            return Map.of("quarkus.http.test-port", Integer.toString(port),
                    "delayq.topics." + TOPIC + ".http.url", "http://127.0.0.1:" + port + "/slow-target",
                    "delayq.topics." + TOPIC + ".http.timeout", "600ms",
                    "delayq.topics." + TOPIC + ".retry.initial", "10ms");
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

    @Inject
    Jobs jobs;

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
