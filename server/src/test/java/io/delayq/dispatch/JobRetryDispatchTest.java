package io.delayq.dispatch;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.DelayqConfig;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobRetry;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.dev.Resp;
import io.delayq.dispatch.TestObservers.Delivery;
import io.delayq.store.JobRecord;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

/**
 * A job's own retry backoff on the failure path: its attempts are spaced by its initial and max
 * delay while a job of the same topic without one follows the topic's
 * ({@code delayq.topics.lifecycle.retry.initial=100ms}, {@code .max=2s}, multiplier 2); it stays
 * with the job through the dead set and a requeue; a record without it follows the topic.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class JobRetryDispatchTest {
    static final String TOPIC = LifecycleTest.TOPIC;
    /** Latency a loaded 2-core machine may add to a gap: take, observer start, Redis round trips. */
    static final long SLACK_MS = 1000;
    @Inject
    Jobs jobs;
    @Inject
    DelayqConfig config;

    private static List<String> steps(int failures) {
        List<String> s = new ArrayList<>(Collections.nCopies(failures, "fail"));
        s.add("ok");
        return s;
    }

    /** Redis-time gaps between the starts of successive attempts of a job that has finished. */
    private List<Long> gapsOnceDone(String id, int deliveries) {
        Awaitility.await().atMost(Duration.ofSeconds(40)).until(() -> TestObservers.LIFECYCLE
                .getOrDefault(id, List.of()).size() >= deliveries && jobs.get(TOPIC, id).isEmpty());
        List<Delivery> seen = TestObservers.LIFECYCLE.get(id);
        assertEquals(deliveries, seen.size(), "acked after the last delivery");
        List<Long> gaps = new ArrayList<>();
        for (int i = 1; i < seen.size(); i++) {
            assertEquals(i + 1, seen.get(i).attempt());
            gaps.add(seen.get(i).redisMs() - seen.get(i - 1).redisMs());
        }
        return gaps;
    }

    /**
     * Each gap at least its delay less the jitter (the delay is counted from the failure, after
     * the attempt started) and less than the delay plus the slack.
     */
    private void assertGaps(String what, List<Long> gaps, long... delays) {
        double jitter = config.retry().jitter();
        System.out.println("JobRetryDispatchTest " + what + ": gaps " + gaps + " ms");
        for (int i = 0; i < delays.length; i++) {
            long low = (long) Math.floor(delays[i] * (1 - jitter));
            long gap = gaps.get(i);
            assertTrue(gap >= low && gap < delays[i] + SLACK_MS, what + ": gap " + (i + 1) + " was " + gap
                    + " ms; backoff " + delays[i] + " ms less up to " + jitter + " jitter (all gaps: " + gaps + ")");
        }
    }

    @Test
    void aJobsOwnInitialAndMaxDelaySpaceItsAttemptsWhileItsTopicNeighbourFollowsTheTopic() {
        String own = DispatchTest.uid("retry-own");
        String topics = DispatchTest.uid("retry-topic");
        // 5 failures: the fifth gap tells the job's max (400) from the topic's (2 s): 200 * 2^4 capped by 2 s would be 2 s
        jobs.schedule(JobRequest.topic(TOPIC).id(own).payload(steps(5)).maxAttempts(10)
                .retry(Duration.ofMillis(200), Duration.ofMillis(400)));
        // 6 failures: 100, 200, 400, 800, 1600, 2000 (the topic's max)
        jobs.schedule(JobRequest.topic(TOPIC).id(topics).payload(steps(6)).maxAttempts(10));

        List<Long> ownGaps = gapsOnceDone(own, 6);
        assertGaps("own retry 200/400", ownGaps, 200, 400, 400, 400, 400);
        List<Long> topicGaps = gapsOnceDone(topics, 7);
        assertGaps("topic's retry 100ms/2s", topicGaps, 100, 200, 400, 800, 1600, 2000);
        // Where the two cannot overlap even with the slack: the job's fifth gap is under 1.4 s (its
        // max, 400 ms; with the topic's max it would be 2 s less jitter, at least 1.6 s), the
        // topic's sixth at least 1.6 s.
        assertTrue(topicGaps.get(5) > ownGaps.get(4), "topic " + topicGaps + ", own " + ownGaps);
    }

    @Test
    void theRetryStaysWithTheJobThroughTheDeadSetAndARequeue() {
        String id = DispatchTest.uid("retry-dead");
        jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(List.of("permanent", "permanent")).maxAttempts(3)
                .retry(Duration.ofMillis(300), Duration.ofMillis(700)));
        JobInfo dead = stateOnceItIs(id, JobState.DEAD, 1);
        assertEquals(new JobRetry(300L, 700L), dead.retry());
        given().get("/jobs/" + TOPIC + "/" + id).then().statusCode(200).body("state", equalTo("dead"))
                .body("retry.initialMs", equalTo(300)).body("retry.maxMs", equalTo(700));
        given().post("/topics/" + TOPIC + "/dead/" + id + "/requeue").then().statusCode(200);
        // run again, dead again: the record the requeue wrote kept it
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> TestObservers.LIFECYCLE.get(id).size() >= 2);
        assertEquals(new JobRetry(300L, 700L), stateOnceItIs(id, JobState.DEAD, 2).retry());
    }

    @Test
    void aRecordWithoutTheOverrideFailsWithItsTopicsBackoff() {
        String id = DispatchTest.uid("retry-old");
        // Written as the previous release wrote records (traced, no override), due in an hour; then run now.
        jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(List.of("fail", "fail", "ok")).delay(Duration.ofHours(1)));
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(TOPIC);
            JobRecord now = JobRecord.decode(redis.str("HGET", k + "jobs", id));
            redis.call("HSET", k + "jobs", id, Long.toString(now.runAt(), 36) + ",0,5,\u001e"
                    + "0af7651916cd43dd8448eb211c80319c" + "b7ad6b7169203331" + "01" + "\n" + now.payload());
        }
        jobs.runNow(TOPIC, id);
        assertGaps("a record of the previous release", gapsOnceDone(id, 3), 100, 200);
    }

    @Test
    void aJobsOwnTimeoutEndsItsAttemptLongBeforeItsTopicsAndCapsTheRetry() {
        String id = DispatchTest.uid("own-timeout");
        // The topic's attempt timeout is delayq.dispatch.attempt-timeout's 10 min; the job's 300 ms.
        // The retry after that timeout waits at most min(300 ms, 10 min), not the topic's 100 ms..2 s
        // backoff of a later attempt: attempt 4's would be 800 ms less jitter.
        jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(List.of("fail", "fail", "fail", "sleep:600000", "ok"))
                .maxAttempts(10).timeout(Duration.ofMillis(300)));
        List<Long> gaps = gapsOnceDone(id, 5);
        System.out.println("JobRetryDispatchTest own timeout: gaps " + gaps + " ms");
        // the fourth attempt ran 300 ms, then waited at most 300 ms: far less than its sleep
        assertTrue(gaps.get(3) < 300 + 300 + SLACK_MS * 5, "gaps " + gaps);
    }

    @Test
    void aJobPastItsExpiresAtIsNeverStartedAndDiesExpired() {
        String id = DispatchTest.uid("expires");
        // Its second attempt would be due 100 ms after the first fails: still before expiresAt; its
        // snooze then asks for an hour, after it: dead as expired, no third delivery.
        jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(List.of("fail", "after:3600000")).maxAttempts(10)
                .expiresAt(java.time.Instant.now().plus(Duration.ofMinutes(10))));
        JobInfo dead = stateOnceItIs(id, JobState.DEAD, 2);
        assertEquals("expired: planned failure of delivery 1", dead.lastError().replace("java.lang.IllegalStateException: ", ""));
        assertEquals(2, TestObservers.LIFECYCLE.get(id).size());
    }

    private JobInfo stateOnceItIs(String id, JobState state, int deliveries) {
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> TestObservers.LIFECYCLE.getOrDefault(id, List.of())
                .size() >= deliveries && jobs.get(TOPIC, id).map(j -> j.state() == state).orElse(false));
        return jobs.get(TOPIC, id).orElseThrow();
    }
}
