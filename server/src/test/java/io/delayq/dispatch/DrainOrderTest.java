package io.delayq.dispatch;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.Job;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * The drain must neither lose nor strand a job that completes while it winds down. A job that
 * completes after the drain timeout, just before the drain reads which jobs still run, is not put
 * back, so its ack must still be sent: the drain used to stop the acker first, and such a job was
 * neither acked nor put back (it sat in flight until its lease expired, losing an attempt). The
 * moment is made exact through the dispatcher's {@code beforeRequeueSnapshot} test seam.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(DrainOrderTest.ShortDrain.class)
class DrainOrderTest {
    static final String TOPIC = "drain-order";

    public static class ShortDrain implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("delayq.drain.timeout", "300ms");
        }
    }

    /** Each job runs until the test releases it. */
    @ApplicationScoped
    public static class Held {
        static final Map<String, CountDownLatch> RELEASE = new ConcurrentHashMap<>();

        void run(@Observes @JobTopic(TOPIC) Job job) throws InterruptedException {
            RELEASE.computeIfAbsent(job.id(), k -> new CountDownLatch(1)).await();
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    Dispatcher dispatcher;

    @Test
    void aJobCompletingJustBeforeTheRequeueSnapshotIsAckedAndOneStillRunningIsPutBack() {
        String done = Topics.fresh("completes");
        String held = Topics.fresh("still-running");
        Held.RELEASE.put(done, new CountDownLatch(1));
        Held.RELEASE.put(held, new CountDownLatch(1));
        jobs.schedule(JobRequest.topic(TOPIC).id(done).delay(Duration.ZERO));
        jobs.schedule(JobRequest.topic(TOPIC).id(held).delay(Duration.ZERO));
        await().atMost(Duration.ofSeconds(10)).until(() -> dispatcher.runningByTopic().get(TOPIC) == 2);

        Internals.call(dispatcher, "beforeRequeueSnapshot", (Runnable) () -> {
            Held.RELEASE.get(done).countDown();
            // Its observer returned and its ack is queued: the snapshot will not see it.
            await().atMost(Duration.ofSeconds(5)).until(() -> dispatcher.runningByTopic().get(TOPIC) == 1);
        });
        try {
            Internals.call(dispatcher, "drain");
        } finally {
            Held.RELEASE.get(held).countDown();
        }

        assertTrue(jobs.get(TOPIC, done).isEmpty(), "the job that completed was acked: " + jobs.get(TOPIC, done));
        JobInfo back = jobs.get(TOPIC, held).orElseThrow();
        assertEquals(JobState.SCHEDULED, back.state(), "the job still running was put back");
        assertEquals(0, back.attempts(), "its interrupted attempt is not counted");
    }
}
