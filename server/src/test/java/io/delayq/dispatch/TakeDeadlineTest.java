package io.delayq.dispatch;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.Job;
import io.delayq.core.JobRequest;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
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
 * lease expired, and a job with one attempt would die without ever running. And a take whose reply
 * this replica reads only after the lease has expired (it froze, or stalled, with the reply unread)
 * must start none of its jobs: meanwhile the lease was reclaimed and the job is due again, for
 * whichever replica takes it; started anyway, the job would run twice, the stale run beside the new
 * one.
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
                    "delayq.dispatch.heartbeat", "500ms", "delayq.dispatch.reclaim-interval", "500ms",
                    "delayq.topics." + TOPIC + ".retry.initial", "100ms");
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

    @Inject
    Dispatcher dispatcher;

    @Inject
    JobQueue store;

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

    /**
     * The taker loop is held (a task posted once the taker sleeps) while its take's reply waits
     * behind it for more than the lease; the test reclaims the expired lease as another replica
     * would.
     */
    @Test
    void aTakeReadAfterItsLeaseExpiredStartsNothingAndTheJobRunsOnce() throws Exception {
        String id = Topics.fresh("late");
        Object loop = Internals.field(dispatcher, "loop");
        Partition p = store.partitionOf(TOPIC, id);
        Object taker = ((List<?>) Internals.field(dispatcher, "takers")).stream()
                .filter(t -> p.equals(Internals.field(t, "partition"))).findFirst().orElseThrow();
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        // On the loop thread, once the taker sleeps (no take of its own in flight): the job due
        // now, its take sent at once, then the loop held, so that the take's reply (and the
        // enqueue's wake-up) wait behind this task.
        Runnable[] holdAfterATake = { null };
        holdAfterATake[0] = () -> {
            if (!"SLEEPING".equals(String.valueOf(Internals.field(taker, "state")))) {
                Internals.call(loop, "post", holdAfterATake[0]); // after the loop's other work
                return;
            }
            jobs.schedule(JobRequest.topic(TOPIC).id(id));
            Internals.call(taker, "takeNow");
            holding.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        Internals.call(loop, "post", holdAfterATake[0]);
        try (Resp redis = new Resp(RedisTestResource.redis().port())) {
            assertTrue(holding.await(10, TimeUnit.SECONDS), "the loop ran the task");
            String inflight = "dq:{" + TOPIC + "#" + p.index() + "}:inflight";
            await().atMost(Duration.ofSeconds(5)).until(() -> redis.str("ZSCORE", inflight, id) != null);
            long deadline = (long) Double.parseDouble(redis.str("ZSCORE", inflight, id));
            await().atMost(Duration.ofSeconds(5)).until(() -> {
                List<Object> t = redis.list("TIME");
                return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000 > deadline;
            });
            // The test's own reclaim, as another replica's (this one's may have come first: then there is nothing left to do).
            store.reclaim(p, 100, 5, 3, List.of(), 0, 100, 1.0, 100, 0);
            assertNull(redis.str("ZSCORE", inflight, id), "reclaimed: due again after 100 ms");
            assertTrue(!Recorder.ATTEMPTS.containsKey(id), "not run while the loop was held");
        } finally {
            release.countDown();
        }
        await().atMost(Duration.ofSeconds(15)).until(() -> Recorder.ATTEMPTS.containsKey(id) && jobs.get(TOPIC, id).isEmpty());
        assertEquals(List.of(1), Recorder.ATTEMPTS.get(id), "run once: the late take's copy not started");
    }
}
