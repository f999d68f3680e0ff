package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * Pause, resume and the rate limit with replicas as real processes of the packaged server: the
 * state is in Redis and enforced by the take script, so every replica obeys it at once.
 */
class FlowControlIT extends OwnRedisTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static Map<String, String> serving(String topic, Receiver receiver, String via, String... more) {
        Map<String, String> s = new HashMap<>();
        s.put("delayq.topics." + topic + ".http.url", receiver.url(via));
        for (int i = 0; i < more.length; i += 2) {
            s.put(more[i], more[i + 1]);
        }
        return s;
    }

    /** The topic's entry of GET /topics on a replica. */
    private static JsonNode topicView(AppProcess app, String topic) throws Exception {
        for (JsonNode t : JSON.readTree(app.get("/topics"))) {
            if (t.get("topic").asText().equals(topic)) {
                return t;
            }
        }
        throw new AssertionError(topic + " not in GET /topics of " + app);
    }

    private static void enqueueDue(AppProcess app, String topic, String prefix, int n) {
        HttpResponse<String> r = app.post("/jobs/batch",
                ReplicasIT.jobsJson(topic, prefix, 0, n, System.currentTimeMillis(), 0));
        assertEquals(200, r.statusCode(), r.body());
    }

    /** Commands Redis ran (scripts' inner ones included), by command, INFO itself left out. */
    private static Map<String, Long> commandCalls(Resp redis) {
        Map<String, Long> calls = new HashMap<>();
        for (String line : redis.str("INFO", "commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_") && !line.startsWith("cmdstat_info:")) {
                String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                String n = line.substring(line.indexOf("calls=") + 6);
                calls.put(name, Long.parseLong(n.substring(0, n.indexOf(','))));
            }
        }
        return calls;
    }

    private static Map<String, Long> since(Map<String, Long> before, Map<String, Long> now) {
        Map<String, Long> delta = new HashMap<>();
        now.forEach((cmd, n) -> {
            long d = n - before.getOrDefault(cmd, 0L);
            if (d > 0) {
                delta.put(cmd, d);
            }
        });
        return delta;
    }

    /**
     * Two replicas serve a topic. Paused over REST on one, due jobs enqueued on the other are taken
     * by neither (over a window, and in Redis: all scheduled, none in flight), and the replicas do
     * not poll Redis for them; resumed on the other, every job is delivered within a second.
     */
    @Test
    void dueJobsOfAPausedTopicAreTakenByNoReplicaAndResumeDeliversThemPromptly() throws Exception {
        String topic = Topics.fresh("paused");
        String k = Topics.keys(topic);
        try (Receiver receiver = new Receiver();
                AppProcess a = AppProcess.start("pause-a", redis.port(), serving(topic, receiver, "a"));
                AppProcess b = AppProcess.start("pause-b", redis.port(), serving(topic, receiver, "b"));
                Resp r = new Resp(redis.port())) {
            enqueueDue(a, topic, "warm", 4);
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> receiver.distinct() == 4);

            HttpResponse<String> paused = a.post("/topics/" + topic + "/pause", "");
            assertEquals(200, paused.statusCode(), paused.body());
            assertTrue(paused.body().contains("\"paused\":true"), paused.body());
            enqueueDue(b, topic, "held", 20);

            Map<String, Long> before = commandCalls(r);
            long t0 = System.nanoTime();
            Awaitility.await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5))
                    .until(() -> receiver.distinct() == 4);
            double seconds = (System.nanoTime() - t0) / 1e9;
            Map<String, Long> used = since(before, commandCalls(r));
            long total = used.values().stream().mapToLong(Long::longValue).sum();
            System.out.printf("paused: 2 replicas ran %d Redis commands in %.1f s with 20 due jobs held: %s%n", total,
                    seconds, used);
            assertTrue(total / seconds < 10, "no busy polling while paused: " + used);

            assertEquals(20L, r.num("HLEN", k + "jobs"), "the held jobs are scheduled");
            assertEquals(0L, r.num("ZCARD", k + "inflight"), "none is in flight");
            assertNotNull(r.str("GET", k + "paused"), "the pause is in Redis");
            JsonNode view = topicView(b, topic);
            assertEquals(20, view.get("scheduled").asInt(), view.toString());
            assertTrue(view.get("paused").asBoolean(), view.toString());

            long resumed = System.nanoTime();
            HttpResponse<String> reply = b.post("/topics/" + topic + "/resume", "");
            assertEquals(200, reply.statusCode(), reply.body());
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> receiver.distinct() == 24);
            long ms = (System.nanoTime() - resumed) / 1_000_000;
            System.out.printf("resumed: 20 held jobs delivered %d ms after the resume%n", ms);
            assertTrue(ms < 1000, "delivered " + ms + " ms after the resume");
            receiver.deliveries.forEach((id, d) -> assertEquals(1, d.size(), id + " delivered once"));
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> r.num("HLEN", k + "jobs") == 0);
        }
    }

    /** The pause is in Redis: a replica started after the pause (the pausing one killed) obeys it. */
    @Test
    void aPauseSurvivesTheRestartOfTheReplicas() throws Exception {
        String topic = Topics.fresh("pause-restart");
        try (Receiver receiver = new Receiver()) {
            AppProcess first = AppProcess.start("pause-first", redis.port(), serving(topic, receiver, "first"));
            assertEquals(200, first.post("/topics/" + topic + "/pause", "").statusCode());
            enqueueDue(first, topic, "j", 10);
            first.kill();
            try (AppProcess second = AppProcess.start("pause-second", redis.port(), serving(topic, receiver, "second"))) {
                Awaitility.await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(4))
                        .until(() -> receiver.distinct() == 0);
                JsonNode view = topicView(second, topic);
                assertTrue(view.get("paused").asBoolean(), view.toString());
                assertEquals(200, second.post("/topics/" + topic + "/resume", "").statusCode());
                Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> receiver.distinct() == 10);
                receiver.deliveries.values().forEach(d -> assertEquals("second", d.get(0).via()));
            }
        }
    }

    /**
     * Three replicas configured with 500 jobs/s; an operator sets 50/s over REST on one of them.
     * 1,000 due jobs then arrive at the receiver at 50/s (within 10 %, over the steady part: the
     * first and last tenth left out), from all three replicas, each once.
     */
    @Test
    void aRateLimitOf50PerSecondHoldsForThreeReplicasTogether() throws Exception {
        String topic = Topics.fresh("rate");
        String configured = "delayq.topics." + topic + ".rate-limit";
        try (Receiver receiver = new Receiver();
                AppProcess a = AppProcess.start("rate-a", redis.port(), serving(topic, receiver, "a", configured, "500"));
                AppProcess b = AppProcess.start("rate-b", redis.port(), serving(topic, receiver, "b", configured, "500"));
                AppProcess c = AppProcess.start("rate-c", redis.port(), serving(topic, receiver, "c", configured, "500"))) {
            HttpResponse<String> set = c.send("PUT", "/topics/" + topic + "/rate-limit", "{\"perSecond\":50}");
            assertEquals(200, set.statusCode(), set.body());
            assertTrue(set.body().contains("\"rateLimit\":{\"perSecond\":50.0,\"source\":\"api\"}"), set.body());
            assertEquals("{\"perSecond\":50.0,\"source\":\"api\"}", topicView(a, topic).get("rateLimit").toString());

            enqueueDue(b, topic, "r", 1000);
            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> receiver.distinct() == 1000);

            List<Long> arrivals = new ArrayList<>();
            Map<String, Integer> byReplica = new HashMap<>();
            receiver.deliveries.forEach((id, d) -> {
                assertEquals(1, d.size(), id + " delivered once");
                arrivals.add(d.get(0).receivedMs());
                byReplica.merge(d.get(0).via(), 1, Integer::sum);
            });
            arrivals.sort(null);
            long from = arrivals.get(100), to = arrivals.get(900);
            double steady = 800 * 1000.0 / (to - from);
            double overall = 999 * 1000.0 / (arrivals.get(999) - arrivals.get(0));
            System.out.printf("rate limit 50/s, 3 replicas: steady %.2f jobs/s (deliveries 100..900), overall %.2f jobs/s,"
                    + " by replica %s%n", steady, overall, byReplica);
            assertTrue(steady >= 45 && steady <= 55, "steady rate " + steady + " jobs/s, not 50 ± 10 %");
            assertTrue(overall <= 55, "overall " + overall + " jobs/s: faster than the limit");
            assertEquals(3, byReplica.size(), "every replica took some: " + byReplica);
        }
    }

    /**
     * Three replicas serve topics A and B from one receiver, which answers one call of A 429 with
     * {@code Retry-After: 2}. A's next call, from any replica, comes at least 2 s later, while B's
     * jobs keep arriving at their pace meanwhile; the throttled job's attempt is not counted.
     */
    @Test
    void aRetryAfterFromTheTargetHoldsItsTopicOnEveryReplicaAndNoOtherTopic() throws Exception {
        String a = Topics.fresh("throttled"), b = Topics.fresh("unthrottled");
        String throttledId = "a10";
        try (Receiver receiver = new Receiver()) {
            receiver.throttleBy(d -> d.id().equals(throttledId) && receiver.deliveries.get(d.id()).size() == 1 ? "2" : null);
            List<AppProcess> apps = new ArrayList<>();
            try {
                for (String via : List.of("a", "b", "c")) {
                    Map<String, String> s = serving(a, receiver, via);
                    s.put("delayq.topics." + b + ".http.url", receiver.url(via));
                    apps.add(AppProcess.start("throttle-" + via, redis.port(), s));
                }
                AppProcess any = apps.get(0);
                long start = System.currentTimeMillis() + 1000;
                // A: a job every 200 ms for 8 s (a10 falls due at 2 s); B: a job every 100 ms.
                assertEquals(200, any.post("/jobs/batch", ReplicasIT.jobsJson(a, "a", 0, 40, start, 8000)).statusCode());
                assertEquals(200, any.post("/jobs/batch", ReplicasIT.jobsJson(b, "b", 0, 80, start, 8000)).statusCode());

                Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> receiver.deliveries.containsKey(throttledId));
                // While held: the job is scheduled again, its attempt not counted, and the topic shows as throttled.
                Awaitility.await().atMost(Duration.ofSeconds(1)).until(() -> JSON
                        .readTree(apps.get(1).get("/jobs/" + a + "/" + throttledId)).get("state").asText().equals("scheduled"));
                JsonNode job = JSON.readTree(apps.get(1).get("/jobs/" + a + "/" + throttledId));
                assertEquals(0, job.get("attempts").asInt(), job.toString());
                JsonNode view = topicView(apps.get(2), a);
                assertTrue(view.has("throttledUntil"), view.toString());
                assertTrue(!topicView(apps.get(2), b).has("throttledUntil"), "B is not held");

                Awaitility.await().atMost(Duration.ofSeconds(30))
                        .until(() -> receiver.completed.keySet().stream().filter(id -> id.startsWith("a")).count() == 40
                                && receiver.completed.keySet().stream().filter(id -> id.startsWith("b")).count() == 80);
                long t429 = receiver.deliveries.get(throttledId).get(0).receivedMs();
                long nextA = Long.MAX_VALUE;
                Map<String, Integer> byReplica = new HashMap<>();
                List<Long> bDuring = new ArrayList<>();
                for (List<Receiver.Delivery> ds : receiver.deliveries.values()) {
                    for (Receiver.Delivery d : ds) {
                        assertEquals(1, d.attempt(), d + ": no attempt counted");
                        if (d.id().startsWith("a") && d.receivedMs() >= t429 && !(d == receiver.deliveries.get(throttledId).get(0))) {
                            nextA = Math.min(nextA, d.receivedMs());
                            byReplica.merge(d.via(), 1, Integer::sum);
                        }
                        if (d.id().startsWith("b") && d.receivedMs() >= t429 && d.receivedMs() < t429 + 2000) {
                            bDuring.add(d.receivedMs());
                        }
                    }
                }
                bDuring.sort(null);
                long bGap = 0;
                for (int i = 1; i < bDuring.size(); i++) {
                    bGap = Math.max(bGap, bDuring.get(i) - bDuring.get(i - 1));
                }
                System.out.printf("Retry-After: 2 on %s: its next call %d ms later (A's later calls by replica %s);"
                        + " %s meanwhile: %d calls in those 2 s, longest gap %d ms%n", a, nextA - t429, byReplica, b,
                        bDuring.size(), bGap);
                assertTrue(nextA - t429 >= 2000, "A called again " + (nextA - t429) + " ms after its 429");
                assertEquals(2, receiver.deliveries.get(throttledId).size(), "the throttled job is called again once");
                assertTrue(bDuring.size() >= 16, "B kept its pace of 10/s: " + bDuring.size() + " calls in the 2 s");
                assertTrue(bGap < 400, "B's longest gap while A was held: " + bGap + " ms");
            } finally {
                apps.forEach(AppProcess::close);
            }
        }
    }
}
