package io.delayq.dispatch;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.notNullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
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
import io.delayq.core.TopicControl;
import io.delayq.core.TopicFlow;
import io.delayq.dispatch.TestObservers.Delivery;
import io.delayq.store.Inspection;
import io.delayq.support.FixedPort;
import io.delayq.support.RedisTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * An HTTP target's 429 or 503 with {@code Retry-After} snoozes the job and holds its topic, the
 * attempt not counted; without a readable {@code Retry-After} it is an ordinary failure.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(HttpTargetThrottleTest.ThrottlingTarget.class)
class HttpTargetThrottleTest {
    /** One topic per test: a hold of one would slow the next test's calls. */
    static final String THROTTLED = "http-throttled", PLAIN = "http-unthrottled", CAPPED = "http-capped",
            LONG_HELD = "http-held-long";

    /** The target is this application itself (a resource below), on a port fixed for the run. */
    public static class ThrottlingTarget implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            int port = FixedPort.forRun("throttling-target");
            String url = "http://127.0.0.1:" + port + "/throttling-target";
            return Map.of("quarkus.http.test-port", Integer.toString(port),
                    "delayq.topics." + THROTTLED + ".http.url", url,
                    "delayq.topics." + PLAIN + ".http.url", url,
                    "delayq.topics." + PLAIN + ".retry.initial", "10ms",
                    "delayq.topics." + CAPPED + ".http.url", url,
                    "delayq.topics." + CAPPED + ".http.max-retry-after", "1s",
                    "delayq.topics." + LONG_HELD + ".http.url", url);
        }
    }

    /**
     * Answers the first call of a job by its id prefix: "slow" 429 + Retry-After: 2; "down" 503
     * alone; "junk" 429 + Retry-After: soon; "year" 429 + Retry-After: a year in seconds; "long"
     * 429 + Retry-After: 600. Other
     * calls (and every later one) get 204.
     */
    @Path("/throttling-target")
    public static class Target {
        static final Map<String, List<Delivery>> CALLS = new ConcurrentHashMap<>();

        @POST
        public Response deliver(@HeaderParam("X-Delayq-Job-Id") String id, @HeaderParam("X-Delayq-Attempt") int attempt,
                String body) {
            List<Delivery> calls = CALLS.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>());
            calls.add(new Delivery(id, attempt, TestObservers.redisTime(), body));
            if (calls.size() > 1) {
                return Response.noContent().build();
            }
            if (id.startsWith("slow")) {
                return Response.status(429).header("Retry-After", "2").build();
            }
            if (id.startsWith("down")) {
                return Response.status(503).build();
            }
            if (id.startsWith("junk")) {
                return Response.status(429).header("Retry-After", "soon").build();
            }
            if (id.startsWith("long")) {
                return Response.status(429).header("Retry-After", "600").build();
            }
            if (id.startsWith("year")) {
                return Response.status(429).header("Retry-After", "31536000").build();
            }
            return Response.noContent().build();
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    Inspection store;
    @Inject
    TopicControl control;
    @Inject
    io.delayq.ops.DelayqMetrics metrics;

    private List<Delivery> callsOnceThereAre(String topic, String id, int n) {
        await().atMost(Duration.ofSeconds(10)).until(() -> Target.CALLS.getOrDefault(id, List.of()).size() >= n);
        await().atMost(Duration.ofSeconds(10)).until(() -> store.get(topic, id).isEmpty());
        return Target.CALLS.get(id);
    }

    @Test
    void a429WithRetryAfterSnoozesTheJobUncountedAndHoldsItsTopic() {
        String id = DispatchTest.uid("slow");
        jobs.schedule(JobRequest.topic(THROTTLED).id(id).maxAttempts(1));
        await().atMost(Duration.ofSeconds(10)).until(() -> Target.CALLS.containsKey(id)
                && store.get(THROTTLED, id).map(j -> j.state() == JobState.SCHEDULED).orElse(false));
        // The hold was set from the 429's arrival, before this: its end is at most Retry-After from now.
        long snoozedSeen = TestObservers.redisTime();
        TopicFlow flow = control.flow(THROTTLED);
        JobInfo snoozed = store.get(THROTTLED, id).orElseThrow();
        assertEquals(0, snoozed.attempts(), "the attempt is not counted");
        assertNull(snoozed.lastError());
        // Other jobs of the topic, due now, wait for the hold too; each enqueue wakes the takers,
        // which go on sleeping: a take during the hold would lease nothing.
        long takesBefore = metrics.takeTimer(THROTTLED).count();
        List<String> others = new java.util.ArrayList<>();
        for (int i = 0; i < 10; i++) {
            others.add(DispatchTest.uid("other"));
            jobs.schedule(JobRequest.topic(THROTTLED).id(others.get(i)));
        }
        assertTrue(flow.throttledUntil() != null && !flow.paused(), "held: " + flow);
        long holdEnds = flow.throttledUntil().toEpochMilli();
        await().atMost(Duration.ofSeconds(5)).until(() -> TestObservers.redisTime() >= holdEnds - 300);
        long takes = metrics.takeTimer(THROTTLED).count() - takesBefore;
        // Not a take per wake-up: one by a taker that had not heard of the hold yet, one more
        // where wake-ups raced it on a loaded machine (seen in a run beside a CI build), and a
        // third once in a clean-clone CI run (2026-12-03; not explained: the taker learns of the
        // hold only from a take's reply). A take per wake-up would be 10 or more.
        assertTrue(takes <= 3, takes + " takes of the held topic for 10 wake-ups");

        List<Delivery> calls = callsOnceThereAre(THROTTLED, id, 2);
        assertEquals(List.of(1, 1), calls.stream().map(Delivery::attempt).toList(), "X-Delayq-Attempt of each call");
        long gap = calls.get(1).redisMs() - calls.get(0).redisMs();
        assertTrue(gap >= 2000 && gap < 3500, "called again " + gap + " ms after the 429; Retry-After: 2");
        for (String other : others) {
            long otherAfter = callsOnceThereAre(THROTTLED, other, 1).get(0).redisMs() - calls.get(0).redisMs();
            assertTrue(otherAfter >= 2000, "the topic's other job was called " + otherAfter + " ms after the 429");
        }
        // Held for Retry-After from the answer, no longer (the lower bound is the gap above): the
        // answer came between the call and the snooze seen, whatever the time between the two.
        assertTrue(flow.throttledUntil().toEpochMilli() <= snoozedSeen + 2000 + 5, "held until Retry-After: "
                + flow.throttledUntil() + ", the snooze seen at " + java.time.Instant.ofEpochMilli(snoozedSeen));
        await().atMost(Duration.ofSeconds(5)).until(() -> control.flow(THROTTLED).throttledUntil() == null);
    }

    @Test
    void a503WithoutRetryAfterIsAnOrdinaryFailure() {
        String id = DispatchTest.uid("down");
        jobs.schedule(JobRequest.topic(PLAIN).id(id).maxAttempts(3));
        List<Delivery> calls = callsOnceThereAre(PLAIN, id, 2);
        assertEquals(List.of(1, 2), calls.stream().map(Delivery::attempt).toList(), "the attempt is counted");
        assertNull(control.flow(PLAIN).throttledUntil(), "the topic is not held");
    }

    @Test
    void a429WithAnUnreadableRetryAfterIsAnOrdinaryFailure() {
        String id = DispatchTest.uid("junk");
        jobs.schedule(JobRequest.topic(PLAIN).id(id).maxAttempts(1));
        await().atMost(Duration.ofSeconds(10))
                .until(() -> store.get(PLAIN, id).map(j -> j.state() == JobState.DEAD).orElse(false));
        JobInfo dead = store.get(PLAIN, id).orElseThrow();
        assertEquals(1, dead.attempts());
        assertTrue(dead.lastError().contains("answered 429"), dead.lastError());
        assertNull(control.flow(PLAIN).throttledUntil(), "the topic is not held");
    }

    @Test
    void aRetryAfterPastMaxRetryAfterHoldsOnlyThatLong() {
        String id = DispatchTest.uid("year");
        jobs.schedule(JobRequest.topic(CAPPED).id(id).maxAttempts(1));
        await().atMost(Duration.ofSeconds(10)).until(() -> control.flow(CAPPED).throttledUntil() != null);
        Instant until = control.flow(CAPPED).throttledUntil();
        List<Delivery> calls = callsOnceThereAre(CAPPED, id, 2);
        assertTrue(until.toEpochMilli() - calls.get(0).redisMs() <= 1100, "held until at most 1 s after: " + until);
        long gap = calls.get(1).redisMs() - calls.get(0).redisMs();
        assertTrue(gap >= 1000 && gap < 2500, "called again " + gap + " ms after a year's Retry-After, capped at 1 s");
        assertEquals(List.of(1, 1), calls.stream().map(Delivery::attempt).toList());
    }

    /**
     * A topic held by a 429 with Retry-After: 600 shows its hold in the topic list (checked on a
     * hold of 10 minutes: the 2 s hold above could end, on a loaded machine, before the list was read).
     */
    @Test
    void aHeldTopicShowsItsHoldInTheTopicList() {
        String id = DispatchTest.uid("long");
        jobs.schedule(JobRequest.topic(LONG_HELD).id(id).maxAttempts(1));
        await().atMost(Duration.ofSeconds(10)).until(() -> control.flow(LONG_HELD).throttledUntil() != null);
        long until = control.flow(LONG_HELD).throttledUntil().toEpochMilli();
        long now = TestObservers.redisTime();
        assertTrue(until > now + 500_000 && until <= now + 600_000, "held about 600 s: until " + until + ", now " + now);
        given().get("/topics").then().statusCode(200)
                .body("find { it.topic == '" + LONG_HELD + "' }.throttledUntil", notNullValue());
        assertEquals(JobState.SCHEDULED, store.get(LONG_HELD, id).orElseThrow().state(), "snoozed until the hold ends");
        jobs.cancel(LONG_HELD, id); // leaves no job behind for the classes that run after
    }
}
