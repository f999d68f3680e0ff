package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/** Request bodies must be application/json: anything else is a 415 that writes nothing. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class JsonBodyTest {
    @TestHTTPResource("/")
    URL base;

    @Test
    void aBodyThatIsNotJsonIsRefusedWith415AndNothingIsWritten() throws Exception {
        String topic = Topics.fresh("media");
        String job = "{\"topic\":\"" + topic + "\",\"id\":\"a\"}";
        given().contentType(ContentType.TEXT).body(job).post("/jobs").then().statusCode(415)
                .contentType(startsWith("application/problem+json")).body("status", equalTo(415))
                .body("field", equalTo("Content-Type")).body("detail", containsString("text/plain"));
        given().contentType(ContentType.URLENC).body("topic=" + topic).post("/jobs").then().statusCode(415);
        given().contentType("multipart/form-data; boundary=x").body("--x--".getBytes()).post("/jobs").then().statusCode(415);
        given().contentType(ContentType.TEXT).body("[" + job + "]").post("/jobs/batch").then().statusCode(415);
        given().contentType(ContentType.TEXT).body("{\"every\":\"1h\",\"topic\":\"" + topic + "\"}")
                .put("/schedules/" + topic).then().statusCode(415);
        // No Content-Type at all is no declaration of JSON either.
        HttpResponse<String> bare = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(base + "jobs"))
                .POST(HttpRequest.BodyPublishers.ofString(job)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(415, bare.statusCode(), bare.body());
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + topic + "*"));
            assertNull(redis.str("HGET", "dq:schedules", topic));
        }
        given().contentType("application/json; charset=UTF-8").body(job).post("/jobs").then().statusCode(201);
    }

    @Test
    void bodylessActionsNeedNoContentType() throws Exception {
        // RestAssured names a form type for an empty POST; curl -X POST names none: both are fine.
        given().post("/schedules/test-nightly/trigger").then().statusCode(201);
        HttpResponse<String> bare = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(base + "schedules/test-nightly/trigger"))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(201, bare.statusCode(), bare.body());
        given().contentType(ContentType.TEXT).post("/topics/" + Topics.fresh("media") + "/dead/x/requeue").then()
                .statusCode(404);
    }

    @Test
    void aBodyWithAnythingAfterItsJsonValueIsA400NamingTheBodyOnEveryEndpointAndNothingIsWritten() {
        String topic = Topics.fresh("trailing");
        String other = Topics.fresh("trailing");
        String job = "{\"topic\":\"" + topic + "\",\"id\":\"1\"}";
        String second = "{\"topic\":\"" + other + "\",\"id\":\"2\"}";
        String schedule = "{\"every\":\"1h\",\"topic\":\"" + topic + "\"}";
        String kept = Topics.fresh("kept");
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + kept + "\",\"id\":\"k\",\"delayMs\":60000}")
                .post("/jobs").then().statusCode(201);
        String runAt = given().get("/jobs/" + kept + "/k").then().statusCode(200).extract().path("runAt");
        for (String tail : new String[] { second, " garbage", " 1", "]", ",", " {" }) {
            trailing(given().contentType(ContentType.JSON).body(job + tail).post("/jobs"));
            trailing(given().contentType(ContentType.JSON).body("[" + job + "]" + tail).post("/jobs/batch"));
            trailing(given().contentType(ContentType.JSON).body("{\"jobs\":[" + job + "]}" + tail).post("/jobs/batch"));
            trailing(given().contentType(ContentType.JSON).body("{\"delayMs\":0}" + tail).patch("/jobs/" + kept + "/k"));
            trailing(given().contentType(ContentType.JSON).body(schedule + tail).put("/schedules/" + topic));
            trailing(given().contentType(ContentType.JSON).body("{\"perSecond\":5}" + tail)
                    .put("/topics/" + topic + "/rate-limit"));
        }
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + topic + "*"));
            assertEquals(0L, redis.countKeys("dq:{" + other + "*"));
            assertNull(redis.str("HGET", "dq:schedules", topic));
        }
        given().get("/jobs/" + kept + "/k").then().statusCode(200).body("runAt", equalTo(runAt));
        // Whitespace after the value is no content: still one JSON value.
        given().contentType(ContentType.JSON).body(job + " \n\t ").post("/jobs").then().statusCode(201);
    }

    private static void trailing(io.restassured.response.Response r) {
        r.then().statusCode(400).contentType(startsWith("application/problem+json")).body("status", equalTo(400))
                .body("field", equalTo("body")).body("detail", containsString("one JSON value"));
    }

    /**
     * The probe's slow client: headers, then a few bytes of a body that never completes. Answered
     * 408 and closed once delayq.http.read-timeout (15 s in the tests) has passed, not held.
     */
    @Test
    void aBodyThatNeverCompletesIsCutOffAtTheReadTimeout() throws Exception {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", io.restassured.RestAssured.port)) {
            socket.setSoTimeout(120_000);
            long start = System.nanoTime();
            socket.getOutputStream().write(("POST /jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 1000\r\n\r\n{\"topic\":").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            // Everything the server sends until it closes the connection.
            String answer = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            long ms = (System.nanoTime() - start) / 1_000_000;
            org.junit.jupiter.api.Assertions.assertTrue(answer.startsWith("HTTP/1.1 408"), answer);
            org.junit.jupiter.api.Assertions.assertTrue(answer.contains("delayq.http.read-timeout"), answer);
            org.junit.jupiter.api.Assertions.assertTrue(ms >= 14_000 && ms < 90_000, "closed after " + ms + " ms");
        }
    }

    /**
     * The probe's slowest client: a request's headers trickled one line every half second, never
     * finished. The idle timeout never fires (bytes keep coming); delayq.http.header-timeout (8 s in
     * the tests) from the request's first byte answers 408 and closes. On a keep-alive connection:
     * a first request answered, the connection idle for longer than the header timeout (waiting
     * between requests is not the header phase, and is not cut), then the slow second request.
     */
    @Test
    void headersThatTrickleAreCutOffAtTheHeaderTimeoutEvenOnAKeptConnection() throws Exception {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", io.restassured.RestAssured.port)) {
            socket.setSoTimeout(120_000);
            java.io.OutputStream out = socket.getOutputStream();
            java.io.InputStream in = new java.io.BufferedInputStream(socket.getInputStream());
            out.write("GET /q/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            out.flush();
            String first = readResponse(in);
            org.junit.jupiter.api.Assertions.assertTrue(first.startsWith("HTTP/1.1 200"), first);
            // Kept open (no byte from the server, no close) for longer than the header timeout: waiting
            // between requests is not the header phase.
            org.awaitility.Awaitility.await().pollInSameThread().during(java.time.Duration.ofSeconds(9))
                    .atMost(java.time.Duration.ofSeconds(30)).until(() -> stillOpen(socket, in));
            socket.setSoTimeout(120_000);
            long start = System.nanoTime();
            out.write("GET /topics HTTP/1.1\r\nHost: localhost\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            out.flush();
            // The client's pace: one header line every half second, until the server closes.
            java.util.concurrent.ScheduledExecutorService trickle = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
            java.util.concurrent.atomic.AtomicInteger line = new java.util.concurrent.atomic.AtomicInteger();
            trickle.scheduleAtFixedRate(() -> {
                try {
                    out.write(("X-Slow-" + line.getAndIncrement() + ": a\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                    out.flush();
                } catch (java.io.IOException closed) {
                    throw new java.io.UncheckedIOException(closed); // the server closed: what the test waits for; stops the task
                }
            }, 500, 500, java.util.concurrent.TimeUnit.MILLISECONDS);
            String answer;
            try {
                answer = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            } finally {
                trickle.shutdownNow();
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            org.junit.jupiter.api.Assertions.assertTrue(answer.startsWith("HTTP/1.1 408"), answer);
            org.junit.jupiter.api.Assertions.assertTrue(answer.contains("delayq.http.header-timeout"), answer);
            org.junit.jupiter.api.Assertions.assertTrue(ms >= 7_500 && ms < 90_000, "closed after " + ms + " ms");
        }
    }

    /** True while the server has neither sent a byte nor closed the connection (a 50 ms read finds nothing). */
    private static boolean stillOpen(java.net.Socket socket, java.io.InputStream in) throws java.io.IOException {
        socket.setSoTimeout(50);
        try {
            in.read();
            return false;
        } catch (java.net.SocketTimeoutException nothing) {
            return true;
        }
    }

    /** One HTTP/1.1 response (status line, headers, a Content-Length or chunked body) as text. */
    private static String readResponse(java.io.InputStream in) throws java.io.IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new java.io.EOFException("closed after " + head);
            }
            head.append((char) b);
        }
        String lower = head.toString().toLowerCase(java.util.Locale.ROOT);
        java.util.regex.Matcher length = java.util.regex.Pattern.compile("content-length: *(\\d+)").matcher(lower);
        if (length.find()) {
            in.readNBytes(Integer.parseInt(length.group(1)));
        } else if (lower.contains("transfer-encoding: chunked")) {
            while (true) {
                StringBuilder size = new StringBuilder();
                for (int b = in.read(); b != '\n'; b = in.read()) {
                    if (b < 0) {
                        throw new java.io.EOFException("closed in a chunk size");
                    }
                    size.append((char) b);
                }
                int n = Integer.parseInt(size.toString().trim(), 16);
                in.readNBytes(n + 2);
                if (n == 0) {
                    break;
                }
            }
        }
        return head.toString();
    }

    /** Sends headers (and a first byte of body) of a POST /jobs; the caller closes the socket. */
    private static java.net.Socket held(long contentLength) throws java.io.IOException {
        java.net.Socket socket = new java.net.Socket("127.0.0.1", io.restassured.RestAssured.port);
        socket.setSoTimeout(60_000);
        socket.getOutputStream().write(("POST /jobs/batch HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + contentLength + "\r\n\r\n[").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        socket.getOutputStream().flush();
        return socket;
    }

    private static String firstLine(java.net.Socket socket) throws java.io.IOException {
        return new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(),
                java.nio.charset.StandardCharsets.UTF_8)).readLine();
    }

    /**
     * A body larger than any the API accepts is refused from its Content-Length (413, before it is
     * read); bodies over the bytes allowed in flight at once get 503 with Retry-After, never a 500.
     */
    @Test
    void bodiesAreBoundedBeforeTheyAreRead() throws Exception {
        try (java.net.Socket huge = held(70_000_000)) {
            org.junit.jupiter.api.Assertions.assertEquals("HTTP/1.1 413 Request Entity Too Large", firstLine(huge));
        }
        // 60 MB held (the test budget is 100 MB); another 50 MB would go over it.
        try (java.net.Socket first = held(60_000_000)) {
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).untilAsserted(() -> {
                try (java.net.Socket second = held(50_000_000)) {
                    org.junit.jupiter.api.Assertions.assertEquals("HTTP/1.1 503 Service Unavailable", firstLine(second));
                }
            });
            given().contentType(ContentType.JSON).body("[]").post("/jobs/batch").then().statusCode(
                    org.hamcrest.Matchers.not(503));
        }
    }
}
