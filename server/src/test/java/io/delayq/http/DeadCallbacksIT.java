package io.delayq.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.IntUnaryOperator;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import io.delayq.SignatureVerifier;
import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.Topics;

/**
 * Dead-job callbacks from real replicas: posted once with the contract's body while the topic's
 * target is down, retried until the receiver takes it, counted and shown when they fail for good,
 * and sent by another replica when the one that buried the job is SIGKILLed before it got through.
 */
class DeadCallbacksIT extends OwnRedisTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String KEY = "callback-key-0123456789abcdef";
    static final String DOWN = "http://127.0.0.1:9/nobody-listens";

    /** One callback as received. */
    record Call(String id, int attempt, String signature, String topic, byte[] body) {
        JsonNode json() throws IOException {
            return JSON.readTree(body);
        }
    }

    /** A callback receiver whose answer to the n-th call (from 1) is {@code status}; 0 = never answer. */
    static final class Hook implements AutoCloseable {
        final HttpServer server;
        final List<Call> calls = new CopyOnWriteArrayList<>();
        final CountDownLatch release = new CountDownLatch(1);
        volatile IntUnaryOperator status = n -> 200;

        Hook() throws IOException {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
            server.createContext("/dead", this::handle);
            server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
            server.start();
        }

        void handle(HttpExchange ex) throws IOException {
            byte[] body = ex.getRequestBody().readAllBytes();
            calls.add(new Call(ex.getRequestHeaders().getFirst("X-Delayq-Job-Id"),
                    Integer.parseInt(ex.getRequestHeaders().getFirst("X-Delayq-Attempt")),
                    ex.getRequestHeaders().getFirst("X-Delayq-Signature"), ex.getRequestHeaders().getFirst("X-Delayq-Topic"),
                    body));
            int s = status.applyAsInt(calls.size());
            if (s == 0) {
                try {
                    release.await(60, TimeUnit.SECONDS); // held: the caller is killed meanwhile
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                ex.close();
                return;
            }
            ex.sendResponseHeaders(s, -1);
            ex.close();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort() + "/dead";
        }

        @Override
        public void close() {
            release.countDown();
            server.stop(0);
        }
    }

    static Map<String, String> settings(String topic, String deadUrl, String... more) {
        Map<String, String> s = new HashMap<>();
        s.put("delayq.topics." + topic + ".http.url", DOWN);
        s.put("delayq.topics." + topic + ".dead-url", deadUrl);
        s.put("delayq.topics." + topic + ".max-attempts", "2");
        s.put("delayq.topics." + topic + ".retry.initial", "100ms");
        s.put("delayq.callbacks.retry-initial", "200ms");
        s.put("delayq.callbacks.max-attempts", "3");
        s.put("delayq.callbacks.timeout", "2s");
        s.put("delayq.callbacks.poll-interval", "500ms");
        for (int i = 0; i < more.length; i += 2) {
            s.put(more[i], more[i + 1]);
        }
        return s;
    }

    static void enqueue(AppProcess app, String topic, String id) {
        var r = app.post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"payload\":{\"order\":42,\"items\":[1,2]}}");
        assertEquals(201, r.statusCode(), r.body());
    }

    @Test
    void aJobThatDiesPostsItsCallbackOnceWhileItsTargetIsDownAndAgainOnlyWhenItDiesAgain() throws Exception {
        String topic = Topics.fresh("cb-once");
        try (Hook hook = new Hook();
                AppProcess app = AppProcess.start("cb-once", redis.port(),
                        settings(topic, hook.url(), "delayq.topics." + topic + ".http.signing-keys", KEY))) {
            enqueue(app, topic, "order-42");
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> hook.calls.size() == 1);
            // Once: no second call over several polls and claim expiries.
            Awaitility.await().during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(6)).until(() -> hook.calls.size() == 1);
            Call c = hook.calls.get(0);
            JsonNode body = c.json();
            assertEquals(List.of("topic", "id", "attempts", "lostAttempts", "lastError", "diedAt", "payload"),
                    iterate(body.fieldNames()));
            assertEquals(topic, body.get("topic").asText());
            assertEquals("order-42", body.get("id").asText());
            assertEquals(2, body.get("attempts").asInt());
            assertEquals(0, body.get("lostAttempts").asInt());
            assertTrue(body.get("lastError").asText().contains("not reached"), body.toString());
            assertTrue(body.get("lastError").asText().startsWith("HTTP target "), "the target's failure as it says it, "
                    + "without a Java class name: " + body);
            Instant diedAt = Instant.parse(body.get("diedAt").asText());
            assertTrue(Duration.between(diedAt, Instant.now()).abs().toSeconds() < 30, body.toString());
            assertEquals(JSON.readTree("{\"order\":42,\"items\":[1,2]}"), body.get("payload"));
            assertTrue(SignatureVerifier.of(KEY).verify(c.signature(), c.topic(), c.id(), Integer.toString(c.attempt()), c.body()),
                    "signed like a target call: " + c.signature());
            assertEquals("dead", JSON.readTree(app.get("/jobs/" + topic + "/order-42")).get("state").asText());

            // Requeued, it dies again: one more callback, of its second death, and none for the requeue.
            assertEquals(200, app.post("/topics/" + topic + "/dead/order-42/requeue", "").statusCode());
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> hook.calls.size() == 2);
            Awaitility.await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(4)).until(() -> hook.calls.size() == 2);
            assertTrue(Instant.parse(hook.calls.get(1).json().get("diedAt").asText()).isAfter(diedAt));
            try (Resp r = new Resp(redis.port())) {
                assertEquals(0L, r.num("ZCARD", Topics.keys(topic) + "callbacks"));
                assertEquals(0L, r.num("HLEN", Topics.keys(topic) + "cbdata"));
            }
        }
    }

    @Test
    void aReceiverFailingTwiceIsRetriedUntilItTakesTheCallback() throws Exception {
        String topic = Topics.fresh("cb-retry");
        try (Hook hook = new Hook(); AppProcess app = AppProcess.start("cb-retry", redis.port(), settings(topic, hook.url()))) {
            hook.status = n -> n <= 2 ? 503 : 204;
            enqueue(app, topic, "flaky-1");
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> hook.calls.size() == 3);
            assertEquals(List.of(1, 2, 3), hook.calls.stream().map(Call::attempt).toList());
            for (Call c : hook.calls) {
                assertEquals("flaky-1", c.json().get("id").asText());
            }
            try (Resp r = new Resp(redis.port())) {
                Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> r.num("ZCARD", Topics.keys(topic) + "callbacks") == 0);
                assertEquals(0L, r.num("ZCARD", Topics.keys(topic) + "cbfailed"));
            }
            assertTrue(app.get("/q/metrics").contains("delayq_callbacks_failed_total{topic=\"" + topic + "\"} 0.0"));
        }
    }

    @Test
    void aCallbackThatFailsForGoodIsCountedLoggedAndShown() throws Exception {
        String topic = Topics.fresh("cb-fails");
        try (Hook hook = new Hook(); AppProcess app = AppProcess.start("cb-fails", redis.port(), settings(topic, hook.url()))) {
            hook.status = n -> 500;
            enqueue(app, topic, "doomed-7");
            Awaitility.await().atMost(Duration.ofSeconds(20))
                    .until(() -> app.get("/q/metrics").contains("delayq_callbacks_failed_total{topic=\"" + topic + "\"} 1.0"));
            assertEquals(3, hook.calls.size(), "max-attempts 3");
            assertTrue(app.logText().lines().anyMatch(l -> l.contains("WARN") && l.contains("doomed-7") && l.contains(topic)
                    && l.contains("failed for good")), app.logText());
            String page = app.get("/delayq/topics/" + topic);
            assertTrue(page.contains("Failed dead-job callbacks") && page.contains("data-callback=\"doomed-7\""), page);
            assertTrue(page.contains("answered 500"), page);
        }
    }

    @Test
    void aReplicaKilledBeforeItsCallbackGotThroughLeavesItToAnother() throws Exception {
        String topic = Topics.fresh("cb-kill");
        try (Hook hook = new Hook()) {
            hook.status = n -> n == 1 ? 0 : 200; // the first call hangs: its replica dies in the middle of it
            AppProcess victim = AppProcess.start("cb-victim", redis.port(), settings(topic, hook.url()));
            try {
                enqueue(victim, topic, "orphan-1");
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> hook.calls.size() == 1);
            } finally {
                victim.kill();
            }
            try (Resp r = new Resp(redis.port())) {
                assertEquals(1L, r.num("ZCARD", Topics.keys(topic) + "callbacks"), "the callback is in Redis, claimed");
            }
            // The heir has the dead-url but no target for the topic: sending callbacks is not serving.
            Map<String, String> heirSettings = settings(topic, hook.url());
            heirSettings.remove("delayq.topics." + topic + ".http.url");
            try (AppProcess heir = AppProcess.start("cb-heir", redis.port(), heirSettings); Resp r = new Resp(redis.port())) {
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> hook.calls.size() == 2);
                Call second = hook.calls.get(1);
                assertEquals("orphan-1", second.json().get("id").asText());
                assertEquals(2, second.attempt(), "the killed replica's try is counted");
                Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> r.num("ZCARD", Topics.keys(topic) + "callbacks") == 0);
                assertTrue(heir.isAlive());
            }
        }
    }

    static List<String> iterate(java.util.Iterator<String> it) {
        List<String> out = new java.util.ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }
}
