package io.delayq.ops;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.delayq.support.FixedPort;
import io.delayq.support.Receiver;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.http.ContentType;

/**
 * The standalone server as it comes (quarkus.otel.sdk.disabled=true: nothing exported): a
 * {@code traceparent} sent with an enqueue reaches the HTTP target with the same trace id, so the
 * target's spans join the caller's trace. It used to get a new random trace id.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(TraceContextPassThroughTest.NotExported.class)
class TraceContextPassThroughTest {
    static final String TOPIC = "passthrough-http";
    private static Receiver receiver;

    /** Tracing as the server's defaults have it (SDK disabled); a topic posted to a real receiver. */
    public static class NotExported implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("quarkus.otel.sdk.disabled", "true",
                    "delayq.topics." + TOPIC + ".http.url",
                    "http://127.0.0.1:" + FixedPort.forRun("passthrough-receiver") + "/deliver");
        }
    }

    @BeforeAll
    static void startReceiver() {
        receiver = new Receiver(FixedPort.forRun("passthrough-receiver"));
    }

    @AfterAll
    static void stopReceiver() {
        receiver.close();
    }

    private static List<String> traceparents(String id) {
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> receiver.deliveries.containsKey(id));
        return receiver.traceparents.getOrDefault(id, List.of());
    }

    @Test
    void aTraceparentSentWithAnEnqueueReachesTheTargetWithTheSameTraceId() {
        String traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
        String incoming = "00-" + traceId + "-00f067aa0ba902b7-01";
        String id = Topics.fresh("job");
        given().contentType(ContentType.JSON).header("traceparent", incoming)
                .body("{\"topic\":\"" + TOPIC + "\",\"id\":\"" + id + "\"}").post("/jobs").then().statusCode(201);
        String batched = Topics.fresh("job");
        given().contentType(ContentType.JSON).header("traceparent", incoming)
                .body("[{\"topic\":\"" + TOPIC + "\",\"id\":\"" + batched + "\"}]").post("/jobs/batch").then()
                .statusCode(200);
        for (String job : List.of(id, batched)) {
            List<String> got = traceparents(job);
            assertEquals(1, got.size(), "one traceparent: " + got);
            String[] parts = got.get(0).split("-");
            assertEquals(4, parts.length, got.get(0));
            assertEquals("00", parts[0], got.get(0));
            assertEquals(traceId, parts[1], "the enqueue's trace: " + got.get(0));
            assertTrue(parts[2].matches("[0-9a-f]{16}") && !parts[2].equals("0000000000000000"), got.get(0));
            assertEquals("01", parts[3], "sampled as the caller said: " + got.get(0));
        }
    }

    @Test
    void aMalformedTraceparentIsIgnoredAndTheJobStillRuns() {
        String id = Topics.fresh("job");
        given().contentType(ContentType.JSON).header("traceparent", "00-not-a-trace-01")
                .body("{\"topic\":\"" + TOPIC + "\",\"id\":\"" + id + "\"}").post("/jobs").then().statusCode(201);
        traceparents(id).forEach(t -> assertNotEquals("00-not-a-trace-01", t));
    }
}
