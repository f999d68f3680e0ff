package io.delayq.dispatch;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.micrometer.core.instrument.MeterRegistry;

import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.dispatch.TestObservers.Delivery;
import io.delayq.store.Inspection;
import io.delayq.support.RedisTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

/** What an observer can do with its job besides return or throw: snooze it, fail it for good. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class LifecycleTest {
    static final String TOPIC = "lifecycle";
    @Inject
    Jobs jobs;
    @Inject
    Inspection store;
    @Inject
    MeterRegistry registry;

    private List<Delivery> deliveriesOnceThereAre(String id, int n) {
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> TestObservers.LIFECYCLE.getOrDefault(id, List.of()).size() >= n);
        return TestObservers.LIFECYCLE.get(id);
    }

    private JobInfo stateOnceItIs(String id, JobState state) {
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> store.get(TOPIC, id).map(j -> j.state() == state).orElse(false));
        return store.get(TOPIC, id).orElseThrow();
    }

    @Test
    void aSnoozedJobRunsAgainAtTheTimeAskedWithItsAttemptCountAndLastErrorUnchanged() {
        String id = DispatchTest.uid("snooze-until");
        double snoozedBefore = registry.counter("delayq.jobs.snoozed", "topic", TOPIC).count();
        // Two attempts allowed: had the snooze counted as a failure, the job would be dead. Snoozed
        // for 4 s so that the REST look-up below (RestAssured's first call is slow) sees it scheduled.
        jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(List.of("fail", "until:4000", "ok")).maxAttempts(2));
        deliveriesOnceThereAre(id, 2);
        JobInfo snoozed = stateOnceItIs(id, JobState.SCHEDULED);
        long until = TestObservers.SNOOZED_UNTIL.get(id);
        assertEquals(until, snoozed.runAt().toEpochMilli(), "due at the time asked");
        assertEquals(1, snoozed.attempts(), "the failed attempt counts, the snoozed one does not");
        assertTrue(snoozed.lastError().contains("planned failure of delivery 1"), snoozed.lastError());
        given().get("/jobs/" + TOPIC + "/" + id).then().statusCode(200).body("state", equalTo("scheduled"))
                .body("attempts", equalTo(1)).body("lastError", containsString("planned failure of delivery 1"));

        List<Delivery> seen = deliveriesOnceThereAre(id, 3);
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> store.get(TOPIC, id).isEmpty());
        assertEquals(List.of(1, 2, 2), seen.stream().map(Delivery::attempt).toList(), "the run after the snooze is attempt 2 again");
        long late = seen.get(2).redisMs() - until;
        assertTrue(late >= 0, "ran " + -late + " ms before the time asked");
        assertTrue(late < 1000, "ran " + late + " ms after the time asked");
        assertEquals(3, TestObservers.LIFECYCLE.get(id).size(), "acked after the third delivery");
        assertEquals(snoozedBefore + 1, registry.counter("delayq.jobs.snoozed", "topic", TOPIC).count());
    }

    @Test
    void aJobSnoozedForADurationRunsThatLongAfterTheSnoozeAsTheSameAttempt() {
        String id = DispatchTest.uid("snooze-for");
        jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(List.of("after:1200", "ok")).maxAttempts(1));
        List<Delivery> seen = deliveriesOnceThereAre(id, 2);
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> store.get(TOPIC, id).isEmpty());
        assertEquals(List.of(1, 1), seen.stream().map(Delivery::attempt).toList());
        long gap = seen.get(1).redisMs() - seen.get(0).redisMs();
        // The snooze counts from the script's Redis time, a little after the first delivery was recorded.
        assertTrue(gap >= 1200, "ran again " + gap + " ms after the snooze; asked 1200");
        assertTrue(gap < 2200, "ran again " + gap + " ms after the snooze; asked 1200");
    }

    @Test
    void aPermanentFailureIsDeadAfterOneAttemptWithItsErrorWhateverAttemptsRemain() {
        String thrown = DispatchTest.uid("permanent");
        String wrapped = DispatchTest.uid("permanent");
        jobs.schedule(JobRequest.topic(TOPIC).id(thrown).payload(List.of("permanent")).maxAttempts(5));
        jobs.schedule(JobRequest.topic(TOPIC).id(wrapped).payload(List.of("wrapped")).maxAttempts(5));
        for (String id : List.of(thrown, wrapped)) {
            JobInfo dead = stateOnceItIs(id, JobState.DEAD);
            assertEquals(1, dead.attempts());
            assertEquals("io.delayq.core.PermanentJobFailureException: order is gone", dead.lastError());
            assertEquals(1, TestObservers.LIFECYCLE.get(id).size(), "run once");
            given().get("/topics/" + TOPIC + "/dead?limit=1000").then().statusCode(200)
                    .body("find { it.id == '" + id + "' }.lastError", containsString("PermanentJobFailureException: order is gone"));
        }
    }

    @Test
    void aSnoozeBeyondTheHorizonFailsTheJobForGoodWithTheReason() {
        String id = DispatchTest.uid("snooze-far");
        // the observer would ask the same at every retry: dead at once, attempts left or not
        jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(List.of("after:" + Duration.ofDays(400).toMillis()))
                .maxAttempts(5));
        JobInfo dead = stateOnceItIs(id, JobState.DEAD);
        assertEquals(1, dead.attempts());
        assertTrue(dead.lastError().contains("beyond delayq.horizon"), dead.lastError());
    }

    @Test
    void aSnoozeOfZeroWaitsTheShortestSnoozeInsteadOfSpinning() {
        String id = DispatchTest.uid("snooze-zero");
        jobs.schedule(JobRequest.topic(TOPIC).id(id).payload(List.of("after:0")));
        List<Delivery> seen = deliveriesOnceThereAre(id, 2);
        long gap = seen.get(1).redisMs() - seen.get(0).redisMs();
        assertTrue(gap >= 100, "ran again " + gap + " ms after a snooze of 0: at least 100 ms");
        assertEquals(List.of(1, 1), seen.stream().map(Delivery::attempt).toList());
    }
}
