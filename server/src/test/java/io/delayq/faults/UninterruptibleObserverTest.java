package io.delayq.faults;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.delayq.core.Job;
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
 * The attempt timeout (2 s) against an observer that ignores interruption (as careless blocking
 * code does: it swallows the InterruptedException and carries on). The attempt ends at its
 * timeout, but the job is not run again on this replica while that observer still runs, and the
 * threads such observers keep are bounded: at most the topic's concurrency run at once, however
 * many attempts time out. End to end through the real dispatcher and a real Redis (the unit-level
 * tests of the attempt's life are with JobRunner's).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(UninterruptibleObserverTest.ShortTimeout.class)
class UninterruptibleObserverTest {
    static final String TOPIC = "ignores-interrupts";
    static final int CONCURRENCY = 2;

    public static class ShortTimeout implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            String t = "delayq.topics." + TOPIC;
            return Map.of(t + ".attempt-timeout", "2s", t + ".retry.initial", "100ms", t + ".concurrency",
                    Integer.toString(CONCURRENCY), t + ".max-attempts", "2");
        }
    }

    /** One run of the observer: when it started and ended (nanoTime), how often it was interrupted. */
    record Run(int attempt, long startNs, long endNs, int interrupts) {
    }

    /**
     * Runs {@code ms} of the payload on the first attempt (on every attempt with {@code "always"}),
     * swallowing every interruption.
     */
    @ApplicationScoped
    public static class Stubborn {
        static final Map<String, List<Run>> RUNS = new ConcurrentHashMap<>();
        static final Map<String, Long> STARTED = new ConcurrentHashMap<>();
        static final AtomicInteger RUNNING = new AtomicInteger();
        static final AtomicInteger MOST_RUNNING = new AtomicInteger();

        void run(@Observes @JobTopic(TOPIC) Job job) {
            long start = System.nanoTime();
            STARTED.put(job.id() + "#" + job.attempt(), start);
            MOST_RUNNING.accumulateAndGet(RUNNING.incrementAndGet(), Math::max);
            Map<?, ?> p = job.payload(Map.class);
            long ms = job.attempt() == 1 || Boolean.TRUE.equals(p.get("always")) ? ((Number) p.get("ms")).longValue() : 0;
            long until = start + ms * 1_000_000;
            int interrupts = 0;
            try {
                for (long left = until - System.nanoTime(); left > 0; left = until - System.nanoTime()) {
                    try {
                        Thread.sleep(Duration.ofNanos(left));
                    } catch (InterruptedException e) {
                        interrupts++; // ignored on purpose: the code under test must cope with it
                    }
                }
            } finally {
                RUNNING.decrementAndGet();
                RUNS.computeIfAbsent(job.id(), k -> new CopyOnWriteArrayList<>())
                        .add(new Run(job.attempt(), start, System.nanoTime(), interrupts));
            }
        }
    }

    @Inject
    Jobs jobs;

    @Inject
    io.micrometer.core.instrument.MeterRegistry registry;

    /** The attempts past their timeout whose observer still runs, as the replica counts them (-1: no such gauge). */
    private double overdueGauge() {
        var gauge = registry.find("delayq.attempts.overdue").tag("topic", TOPIC).gauge();
        return gauge == null ? -1 : gauge.value();
    }

    @BeforeEach
    void idle() {
        await().atMost(Duration.ofSeconds(30)).until(() -> Stubborn.RUNNING.get() == 0);
        Stubborn.MOST_RUNNING.set(0);
    }

    @Test
    void aTimedOutAttemptWhoseObserverIgnoresInterruptionIsNotRunAgainWhileItStillRuns() {
        String id = Topics.fresh("stubborn");
        jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(Map.of("ms", 6000)));
        await().atMost(Duration.ofSeconds(30)).until(() -> jobs.get(TOPIC, id).isEmpty()
                && Stubborn.RUNS.getOrDefault(id, List.of()).size() == 2);
        List<Run> runs = Stubborn.RUNS.get(id);
        Run first = runs.stream().filter(r -> r.attempt() == 1).findFirst().orElseThrow();
        long secondStart = Stubborn.STARTED.get(id + "#2");
        long overlapMs = (first.endNs() - secondStart) / 1_000_000;
        System.out.printf("attempt timeout 2 s, observer ignoring interruption for 6 s: interrupted %d time(s); "
                + "attempt 2 started %d ms after attempt 1 (which ended after %d ms): overlap %d ms%n",
                first.interrupts(), (secondStart - first.startNs()) / 1_000_000,
                (first.endNs() - first.startNs()) / 1_000_000, Math.max(0, overlapMs));
        assertTrue(first.interrupts() >= 1, "the attempt was interrupted at its timeout");
        assertTrue(secondStart >= first.endNs(), "attempt 2 started " + overlapMs + " ms before attempt 1's observer "
                + "returned: the job ran twice at once on this replica");
    }

    @Test
    void threadsKeptByObserversThatIgnoreInterruptionAreBoundedByTheTopicsConcurrency() {
        List<String> ids = List.of(Topics.fresh("stubborn"), Topics.fresh("stubborn"), Topics.fresh("stubborn"),
                Topics.fresh("stubborn"));
        ids.forEach(id -> jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(Map.of("ms", 3000, "always", true))));
        double[] mostOverdue = { -1 };
        // Each attempt times out (2 s) and its observer goes on to 3 s; after 2 attempts the job is dead.
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() -> {
            mostOverdue[0] = Math.max(mostOverdue[0], overdueGauge());
            return ids.stream().allMatch(id -> jobs.get(TOPIC, id).map(j -> j.state() == JobState.DEAD).orElse(false))
                    && Stubborn.RUNNING.get() == 0;
        });
        int runs = ids.stream().mapToInt(id -> Stubborn.RUNS.get(id).size()).sum();
        System.out.printf("attempt timeout 2 s, %d jobs whose observer ignores interruption for 3 s, concurrency %d: "
                + "%d runs; at most %d observers running at once (threads abandoned beyond the slots: %d); "
                + "gauge delayq.attempts.overdue at most %s%n", ids.size(), CONCURRENCY, runs, Stubborn.MOST_RUNNING.get(),
                Math.max(0, Stubborn.MOST_RUNNING.get() - CONCURRENCY), mostOverdue[0] < 0 ? "(absent)" : mostOverdue[0]);
        assertEquals(2 * ids.size(), runs, "two attempts of each job");
        assertTrue(Stubborn.MOST_RUNNING.get() <= CONCURRENCY, Stubborn.MOST_RUNNING.get() + " observers ran at once "
                + "with a concurrency of " + CONCURRENCY + ": timed-out attempts' threads were not counted");
    }
}
