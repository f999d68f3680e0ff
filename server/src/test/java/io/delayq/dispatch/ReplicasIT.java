package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.Receiver;
import io.delayq.dev.Resp;
import io.delayq.support.Topics;

/** Replicas as real processes of the packaged application, against one real Redis. */
class ReplicasIT extends OwnRedisTest {
    static Map<String, String> serving(String topic, Receiver receiver, String... more) {
        Map<String, String> s = new java.util.HashMap<>();
        s.put("delayq.topics." + topic + ".http.url", receiver.url());
        for (int i = 0; i < more.length; i += 2) {
            s.put(more[i], more[i + 1]);
        }
        return s;
    }

    static String jobsJson(String topic, String prefix, int from, int to, long runAtMs, long spreadMs) {
        StringBuilder b = new StringBuilder("[");
        for (int i = from; i < to; i++) {
            long at = runAtMs + (spreadMs * (i - from)) / Math.max(1, to - from);
            b.append(i == from ? "" : ",").append("{\"topic\":\"").append(topic).append("\",\"id\":\"").append(prefix)
                    .append(i).append("\",\"runAt\":\"").append(Instant.ofEpochMilli(at)).append("\",\"payload\":").append(i)
                    .append('}');
        }
        return b.append(']').toString();
    }

    @Test
    void threeReplicasDrain5000JobsDeliveringEachOnce() throws Exception {
        String topic = Topics.fresh("replicas");
        try (Receiver receiver = new Receiver();
                AppProcess a = AppProcess.start("r1", redis.port(), serving(topic, receiver));
                AppProcess b = AppProcess.start("r2", redis.port(), serving(topic, receiver));
                AppProcess c = AppProcess.start("r3", redis.port(), serving(topic, receiver))) {
            long start = System.currentTimeMillis() + 3000;
            List<AppProcess> all = List.of(a, b, c);
            for (int k = 0; k < 5; k++) {
                HttpResponse<String> r = all.get(k % 3).post("/jobs/batch",
                        jobsJson(topic, "j", k * 1000, (k + 1) * 1000, start + k * 400, 400));
                assertEquals(200, r.statusCode(), r.body());
            }
            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> receiver.distinct() == 5000);
            try (Resp r = new Resp(redis.port())) {
                Awaitility.await().atMost(Duration.ofSeconds(20))
                        .until(() -> r.num("HLEN", Topics.keys(topic) + "jobs") == 0);
                assertEquals(0L, r.num("ZCARD", Topics.keys(topic) + "inflight"));
            }
            int twice = 0;
            for (int i = 0; i < 5000; i++) {
                List<Receiver.Delivery> d = receiver.deliveries.get("j" + i);
                assertTrue(d != null, "j" + i + " never delivered");
                twice += d.size() > 1 ? 1 : 0;
            }
            assertEquals(0, twice, "jobs delivered more than once");
            for (AppProcess app : all) {
                assertTrue(app.logText().contains("serves topic " + topic), app + " did not serve the topic");
            }
        }
    }

    @Test
    void jobsOfASigkilledReplicaAreRunByAnotherAfterTheirLeaseExpires() throws Exception {
        String topic = Topics.fresh("sigkill");
        String[] fastLeases = { "delayq.dispatch.lease", "2s", "delayq.dispatch.heartbeat", "500ms",
                "delayq.dispatch.reclaim-interval", "500ms" };
        try (Receiver receiver = new Receiver()) {
            receiver.holdFor(60_000); // a long observer: the first replica dies in the middle of it
            AppProcess victim = AppProcess.start("victim", redis.port(), serving(topic, receiver, fastLeases));
            long now = System.currentTimeMillis();
            assertEquals(200, victim.post("/jobs/batch", jobsJson(topic, "k", 0, 10, now, 0)).statusCode());
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> receiver.distinct() == 10);
            victim.kill();
            receiver.holdFor(0);
            try (AppProcess heir = AppProcess.start("heir", redis.port(), serving(topic, receiver, fastLeases));
                    Resp r = new Resp(redis.port())) {
                Awaitility.await().atMost(Duration.ofSeconds(30))
                        .until(() -> r.num("HLEN", Topics.keys(topic) + "jobs") == 0);
                for (int i = 0; i < 10; i++) {
                    List<Receiver.Delivery> d = receiver.deliveries.get("k" + i);
                    assertEquals(2, d.size(), "k" + i + ": one delivery by the killed replica, one after");
                    assertEquals(1, d.get(1).attempt(), "the lost attempt is no attempt: it is counted apart");
                }
                assertTrue(heir.logText().contains("reclaimed"), "the heir reclaimed the expired leases");
                // The lost attempts have a counter of their own in the heir's metrics.
                assertTrue(heir.get("/q/metrics").contains("delayq_jobs_lost_total{topic=\"" + topic + "\"} 10.0"),
                        "10 lost attempts counted as lost");
            }
        }
    }

    /**
     * A replica serving 40 topics dies holding jobs of 10 of them: the survivor's safety-net poll
     * sees their expired leases (the same MGET as the due times), so every job runs again within
     * lease + a few seconds, not one partition per reclaim interval (30 s each, in turn).
     */
    @Test
    void jobsOfAKilledReplicaServing40TopicsRunAgainWithinTheLeasePlusFiveSeconds() throws Exception {
        String base = Topics.fresh("many");
        try (Receiver receiver = new Receiver()) {
            Map<String, String> settings = new java.util.HashMap<>(Map.of("delayq.dispatch.lease", "2s",
                    "delayq.dispatch.heartbeat", "500ms", "delayq.dispatch.reclaim-interval", "30s",
                    "delayq.retry.initial", "200ms"));
            for (int t = 0; t < 40; t++) {
                settings.put("delayq.topics." + base + "-" + t + ".http.url", receiver.url());
            }
            // The killed replica's deliveries (the first of each job) hang; the survivor's complete
            // (attempt 1 again: a lost attempt is no attempt).
            java.util.Set<String> delivered = java.util.concurrent.ConcurrentHashMap.newKeySet();
            receiver.holdBy(d -> delivered.add(d.id()) ? 60_000 : 0);
            AppProcess victim = AppProcess.start("victim40", redis.port(), settings);
            for (int t = 0; t < 40; t += 4) {
                String topic = base + "-" + t;
                assertEquals(201, victim.post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"" + topic + "-job\"}")
                        .statusCode());
            }
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> receiver.distinct() == 10);
            try (AppProcess heir = AppProcess.start("heir40", redis.port(), settings)) {
                victim.kill();
                long killed = System.nanoTime();
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> receiver.deliveries.values().stream()
                        .filter(d -> d.size() >= 2).count() == 10);
                long tookMs = (System.nanoTime() - killed) / 1_000_000;
                assertTrue(tookMs <= 2_000 + 5_000, "all 10 jobs ran again " + tookMs + " ms after the kill");
            }
        }
    }

    @Test
    void aSleepingReplicaIsWokenByAnEarlierJobEnqueuedOnAnotherAndFiresItOnTime() throws Exception {
        String topic = Topics.fresh("wake");
        try (Receiver receiver = new Receiver();
                AppProcess worker = AppProcess.start("sleeper", redis.port(), serving(topic, receiver));
                AppProcess producer = AppProcess.start("producer", redis.port(), Map.of("delayq.dispatch.enabled", "false"))) {
            // One delivery first: a fresh JVM spends ~100 ms loading the classes of its first job's path.
            assertEquals(201, producer.post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"warm-up\"}").statusCode());
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> receiver.deliveries.containsKey("warm-up"));
            long far = System.currentTimeMillis() + 60_000;
            assertEquals(201, producer.post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"far\",\"runAt\":\""
                    + Instant.ofEpochMilli(far) + "\"}").statusCode());
            // the worker now sleeps toward the job in 60 s; give it the time to take and go to sleep
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> worker.get("/topics").contains("\"" + topic + "\""));
            long worst = 0;
            for (int i = 0; i < 5; i++) {
                HttpResponse<String> r = producer.post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"soon" + i
                        + "\",\"delayMs\":100}");
                assertEquals(201, r.statusCode(), r.body());
                long runAt = Instant.parse(r.body().replaceAll(".*\"runAt\":\"([^\"]+)\".*", "$1")).toEpochMilli();
                String id = "soon" + i;
                Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> receiver.deliveries.containsKey(id));
                long late = receiver.deliveries.get(id).get(0).receivedMs() - runAt;
                System.out.println("wake-up test: " + id + " delivered " + late + " ms after its runAt");
                assertTrue(late >= 0, id + " fired " + (-late) + " ms early");
                worst = Math.max(worst, late);
            }
            assertTrue(worst < 50, "fired up to " + worst + " ms after runAt");
            assertTrue(!receiver.deliveries.containsKey("far"), "the far job is not due");
        }
    }
}
