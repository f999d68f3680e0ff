package io.delayq.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.sun.net.httpserver.HttpServer;

import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.dev.Resp;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.store.TakenJob;
import io.delayq.support.FixedPort;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * A replica sends at most {@code delayq.callbacks.max-in-flight} dead-job callbacks at once and
 * claims no more than that: the others stay unclaimed (no try counted, no claim running out while
 * they wait for a connection) until a call ends.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(DeadCallbackInFlightTest.TwoInFlight.class)
class DeadCallbackInFlightTest {
    static final String TOPIC = Topics.fresh("cb-in-flight");
    static HttpServer receiver;
    static final CountDownLatch release = new CountDownLatch(1);
    static final AtomicInteger inFlight = new AtomicInteger();
    static final AtomicInteger mostInFlight = new AtomicInteger();
    static final AtomicInteger delivered = new AtomicInteger();

    public static class TwoInFlight implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("delayq.topics." + TOPIC + ".dead-url",
                    "http://127.0.0.1:" + FixedPort.forRun("cb-in-flight") + "/dead",
                    "delayq.callbacks.max-in-flight", "2", "delayq.callbacks.timeout", "60s",
                    "delayq.callbacks.poll-interval", "1h");
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    JobQueue store;

    @BeforeAll
    static void startReceiver() throws Exception {
        receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", FixedPort.forRun("cb-in-flight")), 64);
        receiver.setExecutor(Executors.newCachedThreadPool());
        receiver.createContext("/dead", ex -> {
            mostInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            try {
                ex.getRequestBody().readAllBytes();
                release.await(60, TimeUnit.SECONDS); // held until the test lets the calls end
                ex.sendResponseHeaders(204, -1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                inFlight.decrementAndGet();
                delivered.incrementAndGet();
                ex.close();
            }
        });
        receiver.start();
    }

    @AfterAll
    static void stopReceiver() {
        release.countDown();
        receiver.stop(0);
    }

    @Test
    void aReplicaClaimsAndSendsNoMoreCallbacksThanItMayHaveInFlight() {
        List<String> ids = List.of("d1", "d2", "d3", "d4", "d5");
        for (String id : ids) {
            bury(id);
        }
        try (Resp redis = RedisTestResource.resp()) {
            try {
                Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> inFlight.get() == 2);
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                StringBuilder b = new StringBuilder("in flight " + inFlight + ", delivered " + delivered + ": ");
                for (String id : ids) {
                    b.append(redis.call("HGETALL", prefix(store.partitionOf(TOPIC, id)) + "cbdata")).append(' ')
                            .append(redis.call("ZRANGE", prefix(store.partitionOf(TOPIC, id)) + "callbacks", "0", "-1", "WITHSCORES"));
                }
                throw new AssertionError(b.toString(), e);
            }
            // All five buried; two claimed (and being sent), three not claimed yet: no try counted.
            Awaitility.await().atMost(Duration.ofSeconds(5)).during(Duration.ofMillis(500))
                    .until(() -> tries(redis, ids, "0,") == 3 && tries(redis, ids, "1,") == 2);
            assertEquals(2, mostInFlight.get(), "never more than max-in-flight");
            release.countDown();
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> delivered.get() >= 5
                    && ids.stream().allMatch(id -> callbackCount(redis, id) == 0));
            assertEquals(2, mostInFlight.get(), "never more than max-in-flight");
            assertTrue(delivered.get() == 5, "each sent once: " + delivered.get());
        }
    }

    private long tries(Resp redis, List<String> ids, String prefix) {
        long n = 0;
        for (String id : ids) {
            List<?> all = (List<?>) redis.call("HGETALL", prefix(store.partitionOf(TOPIC, id)) + "cbdata");
            for (int i = 0; i + 1 < all.size(); i += 2) {
                n += all.get(i).toString().endsWith(":" + id) && all.get(i + 1).toString().startsWith(prefix) ? 1 : 0;
            }
        }
        return n;
    }

    private long callbackCount(Resp redis, String id) {
        return redis.num("HLEN", prefix(store.partitionOf(TOPIC, id)) + "cbdata");
    }

    private static String prefix(Partition p) {
        return "dq:{" + p.topic() + "#" + p.index() + "}:";
    }

    private void bury(String id) {
        Partition p = store.partitionOf(TOPIC, id);
        jobs.schedule(JobRequest.topic(TOPIC).id(id).delay(Duration.ZERO).maxAttempts(1));
        Set<Integer> older = new HashSet<>();
        TakenJob[] taken = new TakenJob[1];
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
            List<TakenJob> js = store.take(p, 1, 30_000, "T:1:", older, List.of(), 0).jobs();
            taken[0] = js.stream().filter(j -> j.lease().id().equals(id)).findFirst().orElse(null);
            return taken[0] != null;
        });
        store.fail(p, taken[0].lease(), 0, "gone", 10, true);
    }
}
