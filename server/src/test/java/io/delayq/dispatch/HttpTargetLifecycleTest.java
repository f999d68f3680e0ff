package io.delayq.dispatch;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.containsString;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.inject.Inject;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.core.Response;

import org.junit.jupiter.api.Test;

import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.dispatch.TestObservers.Delivery;
import io.delayq.store.Inspection;
import io.delayq.support.FixedPort;
import io.delayq.support.RedisTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * An HTTP target snoozes a job with X-Delayq-Snooze (a 202 + Retry-After alone completes it, as
 * any 2xx), and fails it for good with a non-2xx
 * answer carrying X-Delayq-Permanent: true (the status alone does not).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(HttpTargetLifecycleTest.LifecycleTarget.class)
class HttpTargetLifecycleTest {
    static final String TOPIC = "http-lifecycle";
    /** A target topic with result-retention: its 2xx bodies are kept as the jobs' results. */
    static final String RESULTS = "http-results";
    /**
     * Targets that answer 200 and never end the body (a server of the test's own, {@link #stalling}):
     * one whose call's timeout (http.timeout) is up first, one whose attempt timeout is.
     */
    static final String STALL_CALL = "http-stall-call", STALL_ATTEMPT = "http-stall-attempt";

    /** The target is this application itself (a resource below), on a port fixed for the run. */
    public static class LifecycleTarget implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            int port = FixedPort.forRun("lifecycle-target");
            return Map.ofEntries(
                    Map.entry("quarkus.http.test-port", Integer.toString(port)),
                    Map.entry("delayq.topics." + TOPIC + ".http.url", "http://127.0.0.1:" + port + "/lifecycle-target"),
                    Map.entry("delayq.topics." + TOPIC + ".retry.initial", "100ms"),
                    Map.entry("delayq.topics." + RESULTS + ".http.url", "http://127.0.0.1:" + port + "/result-target"),
                    Map.entry("delayq.topics." + RESULTS + ".result-retention", "10m"),
                    Map.entry("delayq.topics." + STALL_CALL + ".http.url", "http://127.0.0.1:" + FixedPort.forRun("stall-target") + "/"),
                    Map.entry("delayq.topics." + STALL_CALL + ".http.timeout", "2s"),
                    Map.entry("delayq.topics." + STALL_CALL + ".result-retention", "10m"),
                    Map.entry("delayq.topics." + STALL_ATTEMPT + ".http.url", "http://127.0.0.1:" + FixedPort.forRun("stall-target") + "/"),
                    Map.entry("delayq.topics." + STALL_ATTEMPT + ".attempt-timeout", "2s"),
                    Map.entry("delayq.topics." + STALL_ATTEMPT + ".result-retention", "10m"));
        }
    }

    /**
     * Answers by job id prefix, on the first call: "secs" 202 + X-Delayq-Snooze: 2; "date" 202 +
     * X-Delayq-Snooze: an HTTP date about 2 s ahead (Redis time, recorded in {@link #DATED});
     * "poll" 202 + Retry-After: 2 (an API's "accepted, poll later"). Every call: "perm" 422 +
     * X-Delayq-Permanent: true, "plain" 422. Other calls get 204.
     */
    @Path("/lifecycle-target")
    public static class Target {
        static final Map<String, List<Delivery>> CALLS = new ConcurrentHashMap<>();
        static final Map<String, Long> DATED = new ConcurrentHashMap<>();

        @POST
        public Response deliver(@HeaderParam("X-Delayq-Job-Id") String id, @HeaderParam("X-Delayq-Attempt") int attempt,
                String body) {
            List<Delivery> calls = CALLS.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>());
            long now = TestObservers.redisTime();
            calls.add(new Delivery(id, attempt, now, body));
            if (id.startsWith("perm")) {
                return Response.status(422).header("X-Delayq-Permanent", "true").build();
            }
            if (id.startsWith("plain")) {
                return Response.status(422).build();
            }
            if (calls.size() > 1) {
                return Response.noContent().build();
            }
            if (id.startsWith("secs")) {
                return Response.accepted().header("X-Delayq-Snooze", "2").build();
            }
            if (id.startsWith("poll")) {
                return Response.accepted().header("Retry-After", "2").build();
            }
            if (id.startsWith("date")) {
                long until = (now + 2500) / 1000 * 1000; // an HTTP date has whole seconds
                DATED.put(id, until);
                return Response.accepted().header("X-Delayq-Snooze",
                        DateTimeFormatter.RFC_1123_DATE_TIME.format(Instant.ofEpochMilli(until).atOffset(ZoneOffset.UTC)))
                        .build();
            }
            return Response.noContent().build();
        }
    }

    /**
     * Answers 200 by job id prefix: "json" a JSON object, "num" one whose numbers a tree would
     * rewrite, "text" text/plain, "big" 70,000 characters of text, else 204.
     */
    @Path("/result-target")
    public static class ResultTarget {
        @POST
        public Response deliver(@HeaderParam("X-Delayq-Job-Id") String id) {
            if (id.startsWith("json")) {
                return Response.ok("{\"charged\": 12.5, \"ref\": \"r-1\"}", "application/json").build();
            }
            if (id.startsWith("num")) {
                return Response.ok("{ \"big\": 1e5, \"price\": 12.50,\n \"n\": [-0.0, 12345678901234567890123] }\n",
                        "application/json; charset=utf-8").build();
            }
            if (id.startsWith("text")) {
                return Response.ok("charged\nok", "text/plain").build();
            }
            if (id.startsWith("big")) {
                return Response.ok("y".repeat(70_000), "text/plain").build();
            }
            return Response.noContent().build();
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    Inspection store;

    private List<Delivery> callsOnceThereAre(String id, int n) {
        await().atMost(Duration.ofSeconds(10)).until(() -> Target.CALLS.getOrDefault(id, List.of()).size() >= n);
        await().atMost(Duration.ofSeconds(10)).until(() -> store.get(TOPIC, id).isEmpty());
        return Target.CALLS.get(id);
    }

    @Test
    void xDelayqSnoozeInSecondsSnoozesTheJobWithoutCountingTheAttempt() {
        String id = DispatchTest.uid("secs");
        jobs.schedule(JobRequest.topic(TOPIC).id(id).maxAttempts(1));
        await().atMost(Duration.ofSeconds(10)).until(() -> Target.CALLS.containsKey(id)
                && store.get(TOPIC, id).map(j -> j.state() == JobState.SCHEDULED).orElse(false));
        JobInfo snoozed = store.get(TOPIC, id).orElseThrow();
        assertEquals(0, snoozed.attempts());
        assertEquals(null, snoozed.lastError());
        List<Delivery> calls = callsOnceThereAre(id, 2);
        assertEquals(List.of(1, 1), calls.stream().map(Delivery::attempt).toList(), "X-Delayq-Attempt of each call");
        long gap = calls.get(1).redisMs() - calls.get(0).redisMs();
        assertTrue(gap >= 2000 && gap < 3000, "called again " + gap + " ms after the 202; X-Delayq-Snooze: 2");
    }

    @Test
    void aNon2xxWithXDelayqPermanentIsDeadAfterOneCallAndA422AloneIsRetried() {
        String perm = DispatchTest.uid("perm");
        String plain = DispatchTest.uid("plain");
        jobs.schedule(JobRequest.topic(TOPIC).id(perm).maxAttempts(5));
        jobs.schedule(JobRequest.topic(TOPIC).id(plain).maxAttempts(2));
        for (String id : List.of(perm, plain)) {
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> store.get(TOPIC, id).map(j -> j.state() == JobState.DEAD).orElse(false));
        }
        JobInfo dead = store.get(TOPIC, perm).orElseThrow();
        assertEquals(1, Target.CALLS.get(perm).size(), "called once");
        assertEquals(1, dead.attempts());
        assertTrue(dead.lastError().contains("answered 422 with X-Delayq-Permanent: true"), dead.lastError());
        given().get("/topics/" + TOPIC + "/dead?limit=1000").then().statusCode(200)
                .body("find { it.id == '" + perm + "' }.lastError", containsString("X-Delayq-Permanent"));
        assertEquals(2, Target.CALLS.get(plain).size(), "a 422 without the header is an ordinary failure");
    }

    @Test
    void xDelayqSnoozeWithAnHttpDateSnoozesTheJobUntilThen() {
        String id = DispatchTest.uid("date");
        jobs.schedule(JobRequest.topic(TOPIC).id(id).maxAttempts(1));
        List<Delivery> calls = callsOnceThereAre(id, 2);
        long late = calls.get(1).redisMs() - Target.DATED.get(id);
        assertTrue(late >= 0 && late < 1000, "called again " + late + " ms after the X-Delayq-Snooze date");
        assertEquals(1, calls.get(1).attempt());
    }

    @Test
    void a202WithRetryAfterAloneCompletesTheJob() {
        String id = DispatchTest.uid("poll");
        jobs.schedule(JobRequest.topic(TOPIC).id(id));
        List<Delivery> calls = callsOnceThereAre(id, 1);
        assertEquals(1, calls.size(), "an API's \"accepted, poll later\" is done for delayq: not called again");
    }

    @Test
    void aTopicWithResultRetentionKeepsItsTargets2xxBodyJsonAsJsonTextAsAStringALargeOneCut() {
        String json = DispatchTest.uid("json"), text = DispatchTest.uid("text"), big = DispatchTest.uid("big"),
                none = DispatchTest.uid("none"), num = DispatchTest.uid("num");
        for (String id : List.of(json, text, big, none, num)) {
            jobs.schedule(JobRequest.topic(RESULTS).id(id));
        }
        for (String id : List.of(json, text, big, none, num)) {
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> store.get(RESULTS, id).map(j -> j.state() == JobState.SUCCEEDED).orElse(false));
        }
        assertEquals("{\"charged\":12.5,\"ref\":\"r-1\"}", store.get(RESULTS, json).orElseThrow().result());
        assertEquals("{\"big\":1e5,\"price\":12.50,\"n\":[-0.0,12345678901234567890123]}",
                store.get(RESULTS, num).orElseThrow().result(), "JSON kept as sent, its whitespace aside");
        assertEquals("\"charged\\nok\"", store.get(RESULTS, text).orElseThrow().result());
        JobInfo cut = store.get(RESULTS, big).orElseThrow();
        assertEquals(Boolean.TRUE, cut.resultCut());
        assertEquals("\"" + "y".repeat(65_534) + "\"", cut.result(), "the body's start that fits the payload limit as a JSON string");
        assertEquals(null, store.get(RESULTS, none).orElseThrow().result(), "a 204 has no result");
    }

    @Inject
    io.vertx.core.Vertx vertx;

    /**
     * A target that answers 200 with the start of a text body and never ends it (its connection
     * stays open until the server closes): counts the calls per job id.
     */
    private io.vertx.core.http.HttpServer stalling(Map<String, Integer> calls) {
        return vertx.createHttpServer().requestHandler(req -> {
            calls.merge(req.getHeader("X-Delayq-Job-Id"), 1, Integer::sum);
            req.response().setChunked(true).putHeader("Content-Type", "text/plain").write("partial");
        }).listen(FixedPort.forRun("stall-target"), "127.0.0.1").toCompletionStage().toCompletableFuture().join();
    }

    @Test
    void a2xxWhoseBodyNeverEndsSucceedsWithTheBytesReadFlaggedCutAndIsNotCalledAgain() {
        Map<String, Integer> calls = new ConcurrentHashMap<>();
        io.vertx.core.http.HttpServer server = stalling(calls);
        try {
            // The call's timeout is up first (the body is given what is left of it), or the attempt's.
            String byCall = DispatchTest.uid("stall"), byAttempt = DispatchTest.uid("stall");
            jobs.schedule(JobRequest.topic(STALL_CALL).id(byCall));
            jobs.schedule(JobRequest.topic(STALL_ATTEMPT).id(byAttempt));
            for (String[] job : List.of(new String[] { STALL_CALL, byCall }, new String[] { STALL_ATTEMPT, byAttempt })) {
                await().atMost(Duration.ofSeconds(30)).until(() -> store.get(job[0], job[1])
                        .map(j -> j.state() == JobState.SUCCEEDED).orElse(false));
                JobInfo info = store.get(job[0], job[1]).orElseThrow();
                assertEquals(Boolean.TRUE, info.resultCut(), job[0]);
                assertEquals("\"partial\"", info.result(), job[0] + ": the bytes read");
                assertEquals(1, info.attempts(), job[0] + ": one attempt, a success");
                assertEquals(null, info.lastError(), job[0]);
                assertEquals(1, calls.get(job[1]), job[0] + ": called once");
            }
        } finally {
            server.close().toCompletionStage().toCompletableFuture().join();
        }
    }
}
