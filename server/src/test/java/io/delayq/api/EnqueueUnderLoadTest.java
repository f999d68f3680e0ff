package io.delayq.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.StrictEventLoops;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;

/**
 * {@code POST /jobs} and {@code POST /jobs/batch} run on the event loop: under many concurrent
 * clients every request gets the answer it gets alone (201 + Location for a new id, 200 for an
 * existing one, 400 naming the field, 415 for a body that is not JSON), every job lands once, and
 * no event loop is held (Vert.x' blocked-thread checker, at 500 ms, reports nothing). Redis
 * dropping the event loops' own connections costs at most a few 503s, never a wrong answer.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(StrictEventLoops.class)
class EnqueueUnderLoadTest {
    @TestHTTPResource("/jobs")
    URL jobs;
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private HttpRequest post(String path, String contentType, String body) {
        return HttpRequest.newBuilder(URI.create(jobs + path)).header("Content-Type", contentType)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    private static String job(String topic, String id) {
        return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"delayMs\":3600000,\"payload\":{\"n\":\"" + id + "\"}}";
    }

    private static long hlen(String topic) {
        try (Resp r = RedisTestResource.resp()) {
            return r.num("HLEN", Topics.keys(topic) + "jobs");
        }
    }

    /** Sends every request with at most 128 in flight; the replies in order. */
    private List<HttpResponse<String>> sendAll(List<HttpRequest> requests) throws Exception {
        Semaphore inFlight = new Semaphore(128);
        List<CompletableFuture<HttpResponse<String>>> replies = new ArrayList<>(requests.size());
        for (HttpRequest r : requests) {
            inFlight.acquire();
            replies.add(client.sendAsync(r, HttpResponse.BodyHandlers.ofString()).whenComplete((x, e) -> inFlight.release()));
        }
        CompletableFuture.allOf(replies.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
        List<HttpResponse<String>> out = new ArrayList<>(replies.size());
        for (CompletableFuture<HttpResponse<String>> f : replies) {
            out.add(f.get());
        }
        return out;
    }

    @Test
    void manyConcurrentClientsGetTheSameAnswersAsOneAndHoldNoEventLoop() throws Exception {
        String topic = Topics.fresh("rest-load");
        int n = 3000;
        // Warm up (class loading on the first calls), then watch.
        assertEquals(201, client.send(post("", "application/json", job(topic, "warm")), HttpResponse.BodyHandlers.discarding())
                .statusCode());
        StrictEventLoops.clearWarnings();
        List<HttpRequest> requests = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            requests.add(switch (i % 6) {
                case 0, 1, 2 -> post("", "application/json", job(topic, "j" + i));
                case 3 -> post("", "application/json", job(topic, "j" + (i - 3))); // an id sent just before: 201 or 200
                case 4 -> post("", "application/json", "{\"topic\":\"" + topic + "\",\"id\":\"x" + i + "\",\"delayMs\":-5}");
                default -> post("", "text/plain", job(topic, "t" + i));
            });
        }
        List<HttpResponse<String>> replies = sendAll(requests);
        int created = 0, existing = 0;
        for (int i = 0; i < n; i++) {
            HttpResponse<String> r = replies.get(i);
            switch (i % 6) {
                case 0, 1, 2 -> {
                    String id = "j" + i;
                    assertTrue(r.statusCode() == 201 || r.statusCode() == 200, r.statusCode() + " " + r.body());
                    assertTrue(r.body().contains("\"id\":\"" + id + "\"") && r.body().contains("\"state\":\"scheduled\""),
                            r.body());
                    if (r.statusCode() == 201) {
                        created++;
                        assertEquals("/jobs/" + topic + "/" + id,
                                URI.create(r.headers().firstValue("Location").orElseThrow()).getPath());
                    } else {
                        existing++;
                    }
                }
                case 3 -> {
                    assertTrue(r.statusCode() == 201 || r.statusCode() == 200, r.statusCode() + " " + r.body());
                    if (r.statusCode() == 201) {
                        created++;
                    } else {
                        existing++;
                    }
                }
                case 4 -> {
                    assertEquals(400, r.statusCode(), r.body());
                    assertTrue(r.body().contains("delayMs"), r.body());
                }
                default -> {
                    assertEquals(415, r.statusCode(), r.body());
                    assertTrue(r.body().contains("application/json"), r.body());
                }
            }
        }
        // Each id of cases 0 and 3 was created exactly once, whichever request came first.
        assertEquals(n / 6 * 3, created, "one 201 per distinct id");
        assertEquals(n / 6, existing, "one 200 per repeated id");
        assertEquals(n / 6 * 3 + 1, hlen(topic), "every valid job is in Redis once, no invalid one");
        assertEquals(List.of(), StrictEventLoops.warnings(), "an event loop was held");
    }

    @Test
    void concurrentBatchesAnswerInOrderAndHoldNoEventLoop() throws Exception {
        String topic = Topics.fresh("rest-batch-load");
        StrictEventLoops.clearWarnings();
        List<HttpRequest> requests = new ArrayList<>();
        for (int b = 0; b < 40; b++) {
            StringBuilder body = new StringBuilder("[");
            for (int i = 0; i < 100; i++) {
                // every other batch repeats the previous batch's ids: 200 for those already there
                body.append(i > 0 ? "," : "").append(job(topic, "b" + (b / 2) + "-" + i));
            }
            requests.add(post("/batch", "application/json", body.append(']').toString()));
        }
        for (HttpResponse<String> r : sendAll(requests)) {
            assertEquals(200, r.statusCode(), r.body());
            int at = 0;
            for (int i = 0; i < 100; i++) {
                at = r.body().indexOf("-" + i + "\"", at);
                assertTrue(at > 0, "item " + i + " in order: " + r.body());
            }
        }
        assertEquals(20 * 100, hlen(topic));
        assertEquals(List.of(), StrictEventLoops.warnings(), "an event loop was held");
    }

    @Test
    void redisDroppingItsConnectionsCostsAtMostA503ThenEnqueueWorksAgain() throws Exception {
        String topic = Topics.fresh("rest-kill");
        List<HttpRequest> warm = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            warm.add(post("", "application/json", job(topic, "w" + i)));
        }
        sendAll(warm).forEach(r -> assertEquals(201, r.statusCode(), r.body()));
        try (Resp r = RedisTestResource.resp()) {
            r.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
        }
        List<HttpRequest> after = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            after.add(post("", "application/json", job(topic, "a" + i)));
        }
        int ok = 0;
        for (HttpResponse<String> r : sendAll(after)) {
            assertTrue(r.statusCode() == 201 || r.statusCode() == 503, r.statusCode() + " " + r.body());
            ok += r.statusCode() == 201 ? 1 : 0;
        }
        long landed = hlen(topic) - 200;
        assertTrue(landed >= ok, landed + " jobs in Redis for " + ok + " answers 201");
        // Within a second or two every enqueue succeeds again.
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100)).until(() -> {
            List<HttpRequest> again = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                again.add(post("", "application/json", job(topic, "g" + System.nanoTime() + "-" + i)));
            }
            return sendAll(again).stream().allMatch(r -> r.statusCode() == 201);
        });
    }
}
