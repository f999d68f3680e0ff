package io.delayq.dispatch;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.Job;
import io.delayq.core.JobRequest;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/** A hung observer does not hold its job forever: past the attempt timeout, the attempt fails. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(AttemptTimeoutTest.ShortTimeout.class)
class AttemptTimeoutTest {
    static final String TOPIC = "hangs";

    public static class ShortTimeout implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("delayq.topics." + TOPIC + ".attempt-timeout", "500ms",
                    "delayq.topics." + TOPIC + ".retry.initial", "50ms");
        }
    }

    /** Hangs on the first attempt (a minute, unless interrupted), returns on the next. */
    @ApplicationScoped
    public static class Hanging {
        static final Map<String, List<Long>> STARTS = new ConcurrentHashMap<>();

        void run(@Observes @JobTopic(TOPIC) Job job) throws InterruptedException {
            STARTS.computeIfAbsent(job.id(), k -> new CopyOnWriteArrayList<>()).add(System.nanoTime());
            if (job.attempt() == 1) {
                Thread.sleep(60_000);
            }
        }
    }

    @Inject
    Jobs jobs;

    @Test
    void anAttemptThatHangsFailsAtItsTimeoutAndTheJobIsRetried() {
        String id = Topics.fresh("hung");
        jobs.schedule(JobRequest.topic(TOPIC).id(id));
        await().atMost(Duration.ofSeconds(10)).until(() -> Hanging.STARTS.getOrDefault(id, List.of()).size() == 2
                && jobs.get(TOPIC, id).isEmpty());
        List<Long> starts = Hanging.STARTS.get(id);
        long gapMs = (starts.get(1) - starts.get(0)) / 1_000_000;
        assertTrue(gapMs >= 450, "the retry came " + gapMs + " ms after the first attempt, after its 500 ms timeout");
        assertEquals(2, starts.size());
    }
}
