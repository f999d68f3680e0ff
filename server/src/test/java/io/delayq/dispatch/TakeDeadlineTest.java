package io.delayq.dispatch;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

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
import io.delayq.dev.Resp;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * A take that Redis runs after its caller gave up waiting (Redis paused longer than the Redis
 * timeout) must lease nothing: the job would sit in flight under a token nobody holds until its
 * lease expired, and a job with one attempt would die without ever running.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(TakeDeadlineTest.ShortTimeouts.class)
class TakeDeadlineTest {
    static final String TOPIC = "take-deadline";

    public static class ShortTimeouts implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("delayq.redis-timeout", "600ms", "delayq.dispatch.lease", "2s",
                    "delayq.dispatch.heartbeat", "500ms", "delayq.dispatch.reclaim-interval", "500ms");
        }
    }

    @ApplicationScoped
    public static class Recorder {
        static final Map<String, List<Integer>> ATTEMPTS = new ConcurrentHashMap<>();

        void run(@Observes @JobTopic(TOPIC) Job job) {
            ATTEMPTS.computeIfAbsent(job.id(), k -> new CopyOnWriteArrayList<>()).add(job.attempt());
        }
    }

    @Inject
    Jobs jobs;

    @Test
    void aJobDueWhileRedisIsPausedRunsOnceAndIsNeverDead() {
        String id = Topics.fresh("paused");
        try (Resp redis = new Resp(RedisTestResource.redis().port())) {
            jobs.schedule(JobRequest.topic(TOPIC).id(id).delay(Duration.ofMillis(300)).maxAttempts(1));
            // Writes (and so every take) wait for 2 s, more than three Redis timeouts.
            redis.str("CLIENT", "PAUSE", "2000", "WRITE");
            await().atMost(Duration.ofSeconds(15)).ignoreExceptions().until(() -> Recorder.ATTEMPTS.containsKey(id)
                    && jobs.get(TOPIC, id).isEmpty());
            assertEquals(List.of(1), Recorder.ATTEMPTS.get(id), "run once, as its first attempt");
            assertEquals(0L, redis.num("ZCARD", Topics.keys(TOPIC) + "dead"), "nothing died");
        }
    }
}
