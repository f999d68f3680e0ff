package io.delayq.dispatch;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
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
import io.delayq.dev.Resp;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * A job is never run twice at once on one replica: not after its attempt timed out while the
 * observer ignores the interruption, and not when its lease expired while it ran and this replica
 * took it again. A 3 s lease (heartbeat 1 s) shows the leases are kept meanwhile.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(OverdueAttemptTest.Profile.class)
class OverdueAttemptTest {
    /** Attempt timeout 2 s, one slot. */
    static final String STUBBORN = "stubborn";
    /** No short timeout; the lease of a running job is expired by the test. */
    static final String RETAKEN = "retaken";

    public static class Profile implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("delayq.dispatch.lease", "3s", "delayq.dispatch.heartbeat", "1s",
                    "delayq.topics." + STUBBORN + ".attempt-timeout", "2s",
                    "delayq.topics." + STUBBORN + ".concurrency", "1",
                    "delayq.topics." + STUBBORN + ".retry.initial", "50ms",
                    "delayq.topics." + RETAKEN + ".retry.initial", "50ms");
        }
    }

    static final Map<String, List<Integer>> STARTS = new ConcurrentHashMap<>();
    static final Map<String, CountDownLatch> RELEASE = new ConcurrentHashMap<>();
    static final Map<String, String> SEEN_ERROR = new ConcurrentHashMap<>();
    /** How the first attempt of an id ends once released: "fail" or "snooze" (else it returns). */
    static final Map<String, String> FIRST_ENDS = new ConcurrentHashMap<>();

    /**
     * The first attempt of a job with a latch waits for it and ignores every interruption (as
     * code that swallows InterruptedException does); later attempts return at once, noting the
     * lastError they were retried with.
     */
    @ApplicationScoped
    public static class Observers {
        @Inject
        Jobs jobs;

        void stubborn(@Observes @JobTopic(STUBBORN) Job job) {
            run(job);
        }

        void retaken(@Observes @JobTopic(RETAKEN) Job job) {
            run(job);
        }

        private void run(Job job) {
            STARTS.computeIfAbsent(job.id(), k -> new CopyOnWriteArrayList<>()).add(job.attempt());
            CountDownLatch release = RELEASE.get(job.id());
            if (job.attempt() == 1 && release != null) {
                while (release.getCount() > 0) {
                    try {
                        release.await();
                    } catch (InterruptedException ignored) {
                        // deliberately ignored: this observer does not stop when interrupted
                    }
                }
                switch (FIRST_ENDS.getOrDefault(job.id(), "")) {
                    case "fail" -> throw new IllegalStateException("first attempt failed");
                    case "snooze" -> job.snooze(Duration.ofHours(1));
                    default -> {
                    }
                }
                return;
            }
            jobs.get(job.topic(), job.id()).map(JobInfo::lastError).ifPresent(e -> SEEN_ERROR.put(job.id(), e));
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    JobQueue store;
    @Inject
    MeterRegistry registry;

    @Test
    void anObserverThatIgnoresItsTimeoutKeepsItsSlotAndLeaseAndItsJobRunsAgainOnlyAfterItReturns() {
        String id = Topics.fresh("stubborn");
        String other = Topics.fresh("waiting");
        CountDownLatch release = new CountDownLatch(1);
        RELEASE.put(id, release);
        jobs.schedule(JobRequest.topic(STUBBORN).id(id));
        await().atMost(Duration.ofSeconds(10)).until(() -> STARTS.containsKey(id));
        jobs.schedule(JobRequest.topic(STUBBORN).id(other));

        await().atMost(Duration.ofSeconds(5)).until(() -> overdue() == 1.0);
        // Past the timeout, and on past the 3 s lease: the job is not retried (its 50 ms backoff
        // would have started it long before), the one slot stays taken, and the lease is extended.
        String token = leaseOf(STUBBORN, id);
        await().during(Duration.ofMillis(2500)).atMost(Duration.ofSeconds(4))
                .until(() -> STARTS.get(id).size() == 1 && !STARTS.containsKey(other) && overdue() == 1.0
                        && jobs.get(STUBBORN, id).orElseThrow().state() == JobState.INFLIGHT
                        && token.equals(leaseOf(STUBBORN, id)) && !reclaimedByAnotherReplica(STUBBORN, id));

        release.countDown();
        await().atMost(Duration.ofSeconds(10)).until(() -> STARTS.get(id).size() == 2 && jobs.get(STUBBORN, id).isEmpty());
        assertEquals(List.of(1, 2), STARTS.get(id), "retried after the first attempt returned, as attempt 2");
        assertEquals("io.delayq.dispatch.JobRunner$AttemptTimeoutException: attempt 1 ran past its timeout of 2000 ms",
                SEEN_ERROR.get(id));
        await().atMost(Duration.ofSeconds(10)).until(() -> STARTS.containsKey(other) && overdue() == 0.0);
    }

    @Test
    void aJobRetakenWhileItsEarlierAttemptStillRunsHereIsNotRunAgainAndIsAckedWhenThatAttemptSucceeds() {
        String id = Topics.fresh("retaken-ok");
        CountDownLatch release = new CountDownLatch(1);
        RELEASE.put(id, release);
        jobs.schedule(JobRequest.topic(RETAKEN).id(id));
        await().atMost(Duration.ofSeconds(10)).until(() -> STARTS.containsKey(id));
        String first = leaseOf(RETAKEN, id);

        String second = expireAndRetake(id, first);
        await().during(Duration.ofMillis(3500)).atMost(Duration.ofSeconds(5))
                .until(() -> STARTS.get(id).size() == 1 && second.equals(leaseOf(RETAKEN, id))
                        && !reclaimedByAnotherReplica(RETAKEN, id));

        release.countDown();
        await().atMost(Duration.ofSeconds(10)).until(() -> jobs.get(RETAKEN, id).isEmpty());
        assertEquals(List.of(1), STARTS.get(id), "the job ran once, its second lease acked with that run's success");
    }

    @Test
    void aJobRetakenWhileItsEarlierAttemptStillRunsHereIsFailedWithThatAttemptsErrorAndRetried() {
        String id = Topics.fresh("retaken-fails");
        CountDownLatch release = new CountDownLatch(1);
        RELEASE.put(id, release);
        FIRST_ENDS.put(id, "fail");
        jobs.schedule(JobRequest.topic(RETAKEN).id(id));
        await().atMost(Duration.ofSeconds(10)).until(() -> STARTS.containsKey(id));
        String first = leaseOf(RETAKEN, id);

        expireAndRetake(id, first);
        await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(3)).until(() -> STARTS.get(id).size() == 1);

        release.countDown();
        await().atMost(Duration.ofSeconds(10)).until(() -> STARTS.get(id).size() == 2 && jobs.get(RETAKEN, id).isEmpty());
        assertEquals(List.of(1, 2), STARTS.get(id), "the retry is attempt 2: the lost lease was no attempt");
        assertEquals("java.lang.IllegalStateException: first attempt failed", SEEN_ERROR.get(id));
    }

    @Test
    void aJobRetakenWhileItsEarlierAttemptStillRunsHereIsSnoozedAsThatAttemptAsked() {
        String id = Topics.fresh("retaken-snoozes");
        CountDownLatch release = new CountDownLatch(1);
        RELEASE.put(id, release);
        FIRST_ENDS.put(id, "snooze");
        jobs.schedule(JobRequest.topic(RETAKEN).id(id));
        await().atMost(Duration.ofSeconds(10)).until(() -> STARTS.containsKey(id));
        expireAndRetake(id, leaseOf(RETAKEN, id));

        long released = System.currentTimeMillis();
        release.countDown();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> jobs.get(RETAKEN, id).orElseThrow().state() == JobState.SCHEDULED);
        JobInfo snoozed = jobs.get(RETAKEN, id).orElseThrow();
        assertTrue(snoozed.runAt().toEpochMilli() >= released + 3_500_000, "due in an hour: " + snoozed.runAt());
        assertEquals(0, snoozed.attempts());
        assertEquals(List.of(1), STARTS.get(id));
    }

    /**
     * Expires the lease of a running job in Redis and reclaims it as another replica would (this
     * replica never reclaims its own leases), until this replica has taken it again; returns the
     * new lease token.
     */
    private String expireAndRetake(String id, String first) {
        Partition p = store.partitionOf(RETAKEN, id);
        String inflight = Topics.keys(RETAKEN) + "inflight";
        try (Resp redis = RedisTestResource.resp()) {
            // The heartbeat may extend the lease between the two calls: then again.
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                redis.call("ZADD", inflight, "1000", id);
                return store.reclaim(p, 100, 10, 3, java.util.List.of(), 0, 0, 1.0, 0, 0)[0] == 1;
            });
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> {
            String now = leaseOf(RETAKEN, id);
            return now != null && !now.equals(first);
        });
        JobInfo retaken = jobs.get(RETAKEN, id).orElseThrow();
        assertEquals(JobState.INFLIGHT, retaken.state());
        assertEquals(0, retaken.attempts());
        String second = leaseOf(RETAKEN, id);
        assertNotEquals(first, second);
        return second;
    }

    /** Whether another replica's reclaim finds the job's lease expired (the heartbeat did not keep it). */
    private boolean reclaimedByAnotherReplica(String topic, String id) {
        return store.reclaim(store.partitionOf(topic, id), 100, 10, 3, java.util.List.of(), 0, 0, 1.0, 0, 0)[0] > 0;
    }

    private static String leaseOf(String topic, String id) {
        try (Resp redis = RedisTestResource.resp()) {
            return redis.str("HGET", Topics.keys(topic) + "leases", id);
        }
    }

    private double overdue() {
        Gauge g = registry.find("delayq.attempts.overdue").tag("topic", STUBBORN).gauge();
        assertNotNull(g, "the gauge is registered");
        return g.value();
    }
}
