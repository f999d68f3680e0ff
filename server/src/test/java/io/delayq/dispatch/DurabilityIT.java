package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.delayq.dev.RedisProcess;
import io.delayq.support.AppProcess;
import io.delayq.support.EnqueueStream;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * {@code delayq.durability.replicas=1} with the replica gone (killed, or not yet in sync with a
 * newly promoted master): enqueues must fail (503) after the durability timeout, and the jobs
 * already accepted must still run on time. An enqueue waiting in WAIT holds a pooled Redis
 * connection for up to the timeout; it must not starve the takes and acks of connections.
 */
class DurabilityIT {
    @TempDir
    Path masterDir;
    @TempDir
    Path replicaDir;

    @Test
    void whileNoReplicaConfirmsEnqueuesAreRefusedAndAcceptedJobsStillRunOnTime() throws Exception {
        String topic = Topics.fresh("durable");
        // Own directories: a replica writes the RDB of its first sync to disk.
        try (RedisProcess master = RedisProcess.start(RedisProcess.freePort(), List.of("--save", "", "--appendonly",
                "no", "--dir", masterDir.toString()));
                RedisProcess replica = RedisProcess.start(RedisProcess.freePort(), List.of("--save", "", "--appendonly",
                        "no", "--dir", replicaDir.toString(), "--replicaof", "127.0.0.1",
                        Integer.toString(master.port())));
                Receiver receiver = new Receiver();
                AppProcess app = AppProcess.start("durable", master.port(), Map.of("delayq.topics." + topic + ".http.url",
                        receiver.url(), "delayq.durability.replicas", "1", "delayq.durability.timeout", "1s"));
                EnqueueStream stream = new EnqueueStream(topic, "late", 0, List.of(app))) {
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(
                    () -> app.post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"probe\"}").statusCode() == 201);
            long runAt = System.currentTimeMillis() + 4000;
            long lastRunAt = runAt + 1980; // 100 jobs spread over 2 s
            assertEquals(200, app.post("/jobs/batch", ReplicasIT.jobsJson(topic, "due", 0, 100, runAt, 2000)).statusCode());
            ProcessHandle gone = ProcessHandle.of(replica.pid()).orElseThrow();
            gone.destroyForcibly();
            gone.onExit().get();
            // A job without an id: the 503 names the id it was given, so that a retry reuses it.
            var unconfirmed = app.post("/jobs", "{\"topic\":\"" + topic + "\"}");
            assertEquals(503, unconfirmed.statusCode(), unconfirmed.body());
            assertTrue(unconfirmed.body().matches("(?s).*retry with the same id\\(s\\): \\[[^\\]]+\\].*"), unconfirmed.body());
            stream.start(50);
            Awaitility.await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertEquals(100L, receiver.deliveries
                    .keySet().stream().filter(id -> id.startsWith("due")).count(), "accepted jobs delivered, enqueues "
                            + "meanwhile " + stream.statusCounts()));
            stream.stop();
            long latest = receiver.deliveries.entrySet().stream().filter(e -> e.getKey().startsWith("due"))
                    .mapToLong(e -> e.getValue().get(0).receivedMs()).max().orElseThrow();
            System.out.printf("durability without replica: the last of 100 accepted jobs ran %d ms after its runAt; "
                    + "enqueues meanwhile %s%n", latest - lastRunAt, stream.statusCounts());
            assertTrue(latest - lastRunAt < 2000, "accepted jobs ran late: " + (latest - lastRunAt) + " ms");
            assertEquals(Set.of(503), stream.statusCounts().keySet(), "every enqueue refused: " + stream.statusCounts());
        }
    }
}
