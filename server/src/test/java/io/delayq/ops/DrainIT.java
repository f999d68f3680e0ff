package io.delayq.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.Receiver;
import io.delayq.dev.Resp;
import io.delayq.support.Topics;

/** Graceful drain of a real replica process on SIGTERM. */
class DrainIT extends OwnRedisTest {
    @Test
    void sigtermTurnsReadinessDownFinishesWhatItCanAndHandsTheRestToAnotherReplica() throws Exception {
        String topic = Topics.fresh("drain");
        // Even ids finish in 1 s (within the drain timeout); odd ids hang on their first delivery.
        try (Receiver receiver = new Receiver()) {
            receiver.holdBy(d -> receiver.deliveries.get(d.id()).size() > 1 ? 0
                    : Integer.parseInt(d.id().substring(1)) % 2 == 0 ? 1000 : 120_000);
            // The HTTP timeout is far above the test's length: a hanging call must still be running
            // when the drain ends, however slowly the second replica starts on a busy machine.
            Map<String, String> settings = Map.of("delayq.topics." + topic + ".http.url", receiver.url(),
                    "delayq.topics." + topic + ".http.timeout", "60s", "delayq.drain.timeout", "3s");
            AppProcess stopping = AppProcess.start("stopping", redis.port(), settings);
            StringBuilder batch = new StringBuilder("[");
            for (int i = 0; i < 20; i++) {
                batch.append(i == 0 ? "" : ",").append("{\"topic\":\"").append(topic).append("\",\"id\":\"d").append(i)
                        .append("\",\"runAt\":\"").append(Instant.now()).append("\"}");
            }
            assertEquals(200, stopping.post("/jobs/batch", batch.append(']').toString()).statusCode());
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> receiver.distinct() == 20);

            try (AppProcess heir = AppProcess.start("heir", redis.port(), settings); Resp r = new Resp(redis.port())) {
                long t0 = System.nanoTime();
                stopping.terminate();
                // readiness DOWN within the shutdown delay (1 s for these processes)
                Awaitility.await().atMost(Duration.ofMillis(1000)).pollInterval(Duration.ofMillis(50))
                        .until(() -> stopping.status("/q/health/ready") == 503);
                assertTrue(stopping.waitForExit(Duration.ofSeconds(1 + 3 + 4)), "exited within delay + drain timeout + margin");
                double exitedAfter = (System.nanoTime() - t0) / 1e9;

                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> r.num("HLEN", Topics.keys(topic) + "jobs") == 0);
                for (int i = 0; i < 20; i++) {
                    List<Receiver.Delivery> d = receiver.deliveries.get("d" + i);
                    if (i % 2 == 0) {
                        assertEquals(1, d.size(), "d" + i + " finished during the drain and was acked");
                    } else {
                        assertEquals(2, d.size(), "d" + i + " was put back and run by the other replica");
                        assertEquals(1, d.get(1).attempt(), "an interrupted attempt is not counted");
                    }
                }
                String log = stopping.logText();
                assertTrue(log.contains("put 10 unfinished job(s)"), log);
                System.out.printf("drain: exited %.1f s after SIGTERM%n", exitedAfter);
            }
        }
    }
}
