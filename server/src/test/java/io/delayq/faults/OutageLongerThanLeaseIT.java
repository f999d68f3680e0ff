package io.delayq.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.Receiver;
import io.delayq.support.Signals;
import io.delayq.support.Topics;

/**
 * Redis unreachable for longer than the lease while the fleet runs jobs: 3 replicas (lease 6 s,
 * heartbeat 2 s), 60 jobs that each run 10 s, and Redis away for 15 s — frozen (SIGSTOP: clients
 * hang, as during a long failover), and separately killed and restarted from its append-only
 * file (a pod rescheduled). Every holder stays alive, so the contract allows no duplicate: each
 * job starts once, is acked once (the topic empty in Redis at the end) and is never charged an
 * attempt (every delivery says attempt 1). The 60 jobs end during the outage, so their acks wait
 * for Redis; 6 more run 20 s, so that they still run when Redis is back and their leases, expired
 * by then, must be extended by their holders before any reclaim. One Redis and three replicas serve both scenarios, each on its own topic.
 */
class OutageLongerThanLeaseIT {
    static final int JOBS = 60;
    static final long RUN_MS = 10_000;
    /**
     * Jobs beyond the 60 that run 20 s: still running when Redis answers again, so their holders
     * must extend their leases before anything reclaims them (the 60 end during the outage and
     * only wait for their acks).
     */
    static final int LONG_JOBS = 6;
    static final long LONG_RUN_MS = 20_000;
    static final Duration OUTAGE = Duration.ofSeconds(15);
    static final String FROZEN = Topics.fresh("outage-frozen");
    static final String RESTARTED = Topics.fresh("outage-restarted");

    static Path dir;
    static RedisProcess redis;
    static Receiver receiver;
    static List<AppProcess> replicas;

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("delayq-outage-");
        redis = RedisProcess.start(RedisProcess.freePort(), List.of("--save", "", "--appendonly", "yes",
                "--appendfsync", "always", "--dir", dir.toString()));
        receiver = new Receiver();
        receiver.holdBy(d -> d.id().startsWith("long") ? LONG_RUN_MS : RUN_MS);
        // 22 slots per replica and topic: the 66 jobs spread over the three.
        replicas = Faults.startAll(3, i -> AppProcess.start("outage-r" + i, redis.port(), Faults.merge(
                Faults.leaseSettings(), Faults.topic(FROZEN, receiver.url("r" + i), 22),
                Faults.topic(RESTARTED, receiver.url("r" + i), 22))));
    }

    @AfterAll
    static void stop() {
        if (replicas != null) {
            replicas.forEach(AppProcess::close);
        }
        if (receiver != null) {
            receiver.close();
        }
        if (redis != null) {
            Signals.cont(redis.pid()); // a failed test may leave it frozen; a stopped process ignores SIGTERM
            redis.stop();
        }
    }

    @Test
    void aRedisFrozenForLongerThanTheLeaseLeavesEveryRunningJobStartedOnceAndChargedNoAttempt() throws Exception {
        run(FROZEN, "SIGSTOP of redis-server", () -> Signals.stop(redis.pid()), () -> Signals.cont(redis.pid()));
    }

    @Test
    void aRedisKilledAndRestartedFromItsAppendOnlyFileAfterLongerThanTheLeaseLeavesEveryRunningJobStartedOnce()
            throws Exception {
        run(RESTARTED, "SIGKILL of redis-server, restart with AOF", () -> Signals.kill(redis.pid()), redis::start);
    }

    private void run(String topic, String fault, Runnable begin, Runnable end) throws Exception {
        assertEquals(200, replicas.get(0).post("/jobs/batch", Faults.batch(topic, "j", JOBS, 0)).statusCode());
        assertEquals(200, replicas.get(1).post("/jobs/batch", Faults.batch(topic, "long", LONG_JOBS, 0)).statusCode());
        Awaitility.await("all " + (JOBS + LONG_JOBS) + " jobs running").atMost(Duration.ofSeconds(20))
                .until(() -> receiver.tally(topic).distinct() == JOBS + LONG_JOBS);
        Map<String, Long> byReplica = receiver.of(topic).values().stream().collect(java.util.stream.Collectors
                .groupingBy(ds -> String.valueOf(ds.get(0).via()), java.util.TreeMap::new, java.util.stream.Collectors.counting()));

        long begunAt = System.currentTimeMillis();
        begin.run();
        try {
            // The fault's length is what is under test: a fixed time, not a condition to await.
            Thread.sleep(OUTAGE.toMillis());
        } finally {
            end.run();
        }
        long endedAt = System.currentTimeMillis();

        long emptyAfterMs;
        try {
            // A job started again runs 10 or 20 s more before its ack: the topic empties only after it.
            Awaitility.await(topic + " empty in Redis").atMost(Duration.ofMillis(Faults.LEASE_MS + LONG_RUN_MS + 10_000))
                    .pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() -> {
                        try (Resp r = new Resp(redis.port())) {
                            return Faults.topicEmpty(r, topic);
                        }
                    });
            emptyAfterMs = System.currentTimeMillis() - endedAt;
        } catch (ConditionTimeoutException e) {
            try (Resp r = new Resp(redis.port())) {
                throw new AssertionError(topic + " not empty in Redis: " + Faults.topicState(r, topic) + "; receiver: "
                        + receiver.tally(topic), e);
            }
        }
        Receiver.Tally tally = receiver.tally(topic);
        long dead;
        try (Resp r = new Resp(redis.port())) {
            dead = r.num("ZCARD", Topics.keys(topic) + "dead");
        }
        long longTwice = tally.duplicates().keySet().stream().filter(id -> id.startsWith("long")).count();
        System.out.printf("outage longer than the lease (%s, %d s; lease %d ms, heartbeat %d ms; %d jobs running "
                + "10 s and %d running 20 s, first started by %s): %s (of them running 20 s: %d); %d dead; Redis empty "
                + "for the topic %d ms after the outage ended%n", fault, (endedAt - begunAt) / 1000, Faults.LEASE_MS,
                Faults.HEARTBEAT_MS, JOBS, LONG_JOBS, byReplica, tally, longTwice, dead, emptyAfterMs);
        assertEquals(JOBS + LONG_JOBS, tally.distinct(), "every job delivered: " + tally);
        assertEquals(Map.of(), tally.duplicates(), "jobs started more than once though every holder stayed alive");
        assertEquals(Map.of(), tally.charged(), "jobs charged an attempt though nothing failed");
        assertEquals(0, dead, "jobs sent to dead");
    }
}
