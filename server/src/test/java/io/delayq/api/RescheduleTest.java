package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.InvalidJobException;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.core.RescheduleResult;
import io.delayq.dev.Resp;
import io.delayq.dispatch.TestObservers;
import io.delayq.store.Inspection;
import io.delayq.store.JobQueue;
import io.delayq.store.Keys;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;

/** PATCH /jobs/{topic}/{id} and Jobs.reschedule: moves between day shards, the replies, the rules. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class RescheduleTest {
    private static final long DAY_MS = 86_400_000L;
    @Inject
    Jobs jobs;
    @Inject
    JobQueue store;
    @Inject
    Inspection inspection;

    static Response patch(String topic, String id, String body) {
        return given().contentType(ContentType.JSON).body(body).patch("/jobs/" + topic + "/" + id);
    }

    /**
     * A job moved from its shard to the next day's and back: after each move it is in the shard of
     * its runAt and no other, the day index lists exactly the non-empty shards, and "next" is the
     * earliest runAt of the partition (set exactly, also when the earliest job moved later).
     */
    @Test
    void aJobMovedToTheNextDaysShardAndBackKeepsShardsDaysAndNextConsistent() {
        String topic = Topics.fresh("resched-days");
        Instant first = Instant.now().plusSeconds(60).truncatedTo(ChronoUnit.MILLIS);
        jobs.schedule(JobRequest.topic(topic).id("mover").runAt(first));
        // Three days out: never in the shard of "mover"'s next day, even when a run starts just before
        // midnight UTC (first is then the next day already, its next day two days out).
        jobs.schedule(JobRequest.topic(topic).id("stays").delay(Duration.ofDays(3)));
        try (Resp redis = RedisTestResource.resp()) {
            assertConsistent(redis, topic, Map.of("mover", first.toEpochMilli()));

            Instant nextDay = first.plus(Duration.ofDays(1));
            patch(topic, "mover", "{\"runAt\":\"" + nextDay + "\"}").then().statusCode(200)
                    .body("runAt", equalTo(nextDay.toString())).body("state", equalTo("scheduled"))
                    .body("attempts", equalTo(0));
            assertNotEquals(Keys.dayOf(first.toEpochMilli()), Keys.dayOf(nextDay.toEpochMilli()));
            assertEquals(0, redis.num("EXISTS", Topics.keys(topic) + "due:" + Keys.dayOf(first.toEpochMilli())),
                    "the old shard emptied and went");
            assertConsistent(redis, topic, Map.of("mover", nextDay.toEpochMilli()));
            assertEquals(nextDay.toEpochMilli(), redis.num("GET", Topics.keys(topic) + "next"),
                    "the earliest job moved later: next follows it exactly");

            Instant back = Instant.parse(patch(topic, "mover", "{\"delayMs\":1000}").then().statusCode(200)
                    .extract().path("runAt"));
            assertTrue(back.isBefore(nextDay.minus(Duration.ofHours(23))), "back within a second: " + back);
            assertEquals(0, redis.num("EXISTS", Topics.keys(topic) + "due:" + Keys.dayOf(nextDay.toEpochMilli())),
                    "the next day's shard emptied and went");
            assertConsistent(redis, topic, Map.of("mover", back.toEpochMilli()));
            assertEquals(back.toEpochMilli(), redis.num("GET", Topics.keys(topic) + "next"),
                    "the job became the earliest: next lowered to it");

            // Three days out to now: the old shard is none the caller passes at first (it learns it).
            Instant now = jobs.runNow(topic, "stays").job().runAt();
            assertConsistent(redis, topic, Map.of("mover", back.toEpochMilli(), "stays", now.toEpochMilli()));
            assertEquals(now.toEpochMilli(), redis.num("GET", Topics.keys(topic) + "next"));
        }
    }

    /** Every job of the partition in the shard of its runAt only; days = the non-empty shards; next = the earliest. */
    private void assertConsistent(Resp redis, String topic, Map<String, Long> expected) {
        String k = Topics.keys(topic);
        Map<String, Long> runAts = new TreeMap<>();
        TreeSet<Long> nonEmpty = new TreeSet<>();
        for (Object key : redis.list("KEYS", k + "due:*")) {
            String shard = key.toString();
            long day = Long.parseLong(shard.substring(shard.lastIndexOf(':') + 1));
            List<Object> members = redis.list("ZRANGE", shard, "0", "-1", "WITHSCORES");
            assertTrue(!members.isEmpty(), shard + " exists, so it holds jobs");
            nonEmpty.add(day);
            for (int i = 0; i < members.size(); i += 2) {
                long at = (long) Double.parseDouble(members.get(i + 1).toString());
                assertEquals(day, Keys.dayOf(at), members.get(i) + " is in the shard of its runAt");
                assertNull(runAts.put(members.get(i).toString(), at), members.get(i) + " is in one shard only");
            }
        }
        TreeSet<Long> indexed = new TreeSet<>();
        redis.list("ZRANGE", k + "days", "0", "-1").forEach(d -> indexed.add(Long.parseLong(d.toString())));
        assertEquals(nonEmpty, indexed, "the day index lists exactly the non-empty shards");
        expected.forEach((id, at) -> assertEquals(at, runAts.get(id), id + "'s shard score"));
        assertEquals(redis.num("HLEN", k + "jobs"), runAts.size(), "every record has its shard entry");
        long earliest = runAts.values().stream().min(Long::compare).orElseThrow();
        assertTrue(redis.num("GET", k + "next") <= earliest, "next is a lower bound of every runAt");
        for (String id : runAts.keySet()) {
            assertEquals(runAts.get(id), inspection.get(topic, id).orElseThrow().runAt().toEpochMilli(),
                    id + ": the record's runAt is its shard score");
        }
    }

    /**
     * A served job (observer "rec") is moved to tomorrow's shard, then back to half a second from
     * now: it runs once, at its new time, woken by the move (well before a safety-net poll).
     */
    @Test
    void aServedJobMovedAcrossTheDayBoundaryRunsOnceAtItsNewTime() {
        String id = Topics.fresh("resched-run").replace('-', '_');
        JobInfo info = jobs.schedule(JobRequest.topic("rec").id(id).delay(Duration.ofHours(1)));
        RescheduleResult tomorrow = jobs.reschedule("rec", id, info.runAt().plus(Duration.ofDays(1)));
        assertTrue(tomorrow.rescheduled());
        Partition p = store.partitionOf("rec", id);
        assertEquals(0, p.index());
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys("rec");
            assertNull(redis.str("ZSCORE", k + "due:" + Keys.dayOf(info.runAt().toEpochMilli()), id));
            assertEquals(tomorrow.job().runAt().toEpochMilli(),
                    (long) Double.parseDouble(redis.str("ZSCORE", k + "due:" + Keys.dayOf(tomorrow.job().runAt().toEpochMilli()), id)));
        }
        awaitRecServed();
        RescheduleResult soon = jobs.reschedule("rec", id, Duration.ofMillis(500));
        assertEquals(RescheduleResult.Outcome.RESCHEDULED, soon.outcome());
        long runAt = soon.job().runAt().toEpochMilli();
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> !TestObservers.RECORDED.getOrDefault(id, List.of()).isEmpty());
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> inspection.get("rec", id).isEmpty());
        List<TestObservers.Delivery> seen = TestObservers.RECORDED.get(id);
        assertEquals(1, seen.size(), "run once");
        long late = seen.get(0).redisMs() - runAt;
        assertTrue(late >= 0, "ran " + (-late) + " ms before its new runAt");
        assertTrue(late < 400, "ran " + late + " ms after its new runAt: the move woke the taker");
    }

    /**
     * The wake-up tests below time one delivery on topic "rec": first a job due now must have run,
     * so that what they time is the wake-up, not the takers' recovery from an earlier test class's
     * Redis restart (RedisOutageTest runs before this one; its reconnects finish on their own time).
     */
    /**
     * Until a probe job due now runs within 200 ms of its runAt: "rec" is served, and its wake-ups
     * arrive (after a test that stopped Redis, the wake-up subscription comes back a little after
     * the takers do; until then a job is found by the safety-net poll, later than a test allows).
     */
    private void awaitRecServed() {
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> {
            String probe = Topics.fresh("probe").replace('-', '_');
            long runAt = jobs.schedule(JobRequest.topic("rec").id(probe)).runAt().toEpochMilli();
            Awaitility.await().atMost(Duration.ofSeconds(30))
                    .until(() -> !TestObservers.RECORDED.getOrDefault(probe, List.of()).isEmpty());
            return TestObservers.RECORDED.get(probe).get(0).redisMs() - runAt < 200;
        });
    }

    /**
     * A job three days out, run now, runs at once (woken, within 400 ms). A try during which the
     * wake-up subscription was made again (a new pub/sub connection in Redis' CLIENT LIST: after an
     * earlier class's Redis restart it can be re-established twice, seen in CI, and a wake-up
     * published between the two is lost, the job then found by the safety-net poll) is made again
     * with a fresh job, up to 5 tries. A late run while the subscription stayed the same fails at once.
     */
    @Test
    void runNowRunsAScheduledJobAtOnce() {
        List<String> tries = new java.util.ArrayList<>();
        for (int attempt = 1; attempt <= 5; attempt++) {
            awaitRecServed();
            Set<String> subscribers = pubsubClients();
            String id = Topics.fresh("run-now").replace('-', '_');
            jobs.schedule(JobRequest.topic("rec").id(id).delay(Duration.ofDays(3)));
            RescheduleResult now = jobs.runNow("rec", id);
            assertTrue(now.rescheduled());
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> !TestObservers.RECORDED.getOrDefault(id, List.of()).isEmpty());
            long late = TestObservers.RECORDED.get(id).get(0).redisMs() - now.job().runAt().toEpochMilli();
            if (late < 400) {
                return;
            }
            Set<String> after = pubsubClients();
            tries.add(late + " ms late, pub/sub clients " + subscribers + " then " + after);
            assertNotEquals(subscribers, after, "ran " + late + " ms after its runAt while the wake-up subscription"
                    + " stayed the same (" + after + "): the run-now did not wake the taker");
        }
        throw new AssertionError("run-now never ran its job within 400 ms of its runAt: " + tries);
    }

    /** The ids of Redis' pub/sub connections (the replica's wake-up subscription among them). */
    private static Set<String> pubsubClients() {
        try (Resp redis = RedisTestResource.resp()) {
            Set<String> ids = new TreeSet<>();
            for (String line : redis.str("CLIENT", "LIST", "TYPE", "pubsub").split("\n")) {
                if (line.startsWith("id=")) {
                    ids.add(line.substring(3, line.indexOf(' ')));
                }
            }
            return ids;
        }
    }

    @Test
    void unknownIsA404AndAJobInFlightOrDeadA409AndNeitherIsMoved() {
        String topic = Topics.fresh("resched-states");
        patch(topic, "nobody", "{\"delayMs\":0}").then().statusCode(404)
                .contentType("application/problem+json").body("detail", containsString("nobody"));
        assertEquals(RescheduleResult.Outcome.UNKNOWN, jobs.runNow(topic, "nobody").outcome());

        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("busy").delay(Duration.ZERO));
        Lease busy = store.take(p, 1, 30_000, "T:", new HashSet<>(), List.of(), 0).jobs().get(0).lease();
        patch(topic, "busy", "{\"delayMs\":60000}").then().statusCode(409).body("detail", containsString("running"));
        assertEquals(RescheduleResult.Outcome.INFLIGHT, jobs.reschedule(topic, "busy", Duration.ofMinutes(1)).outcome());
        assertEquals(JobState.INFLIGHT, inspection.get(topic, "busy").orElseThrow().state());

        store.fail(p, busy, 0, "boom", 1);
        assertEquals(JobState.DEAD, inspection.get(topic, "busy").orElseThrow().state());
        patch(topic, "busy", "{\"delayMs\":60000}").then().statusCode(409).body("detail", containsString("requeue"));
        assertEquals(RescheduleResult.Outcome.DEAD, jobs.runNow(topic, "busy").outcome());
        assertEquals(JobState.DEAD, inspection.get(topic, "busy").orElseThrow().state(), "still dead");
    }

    @Test
    void brokenRulesAre400NamingTheFieldAndMoveNothing() {
        String topic = Topics.fresh("resched-rules");
        Instant at = jobs.schedule(JobRequest.topic(topic).id("j").delay(Duration.ofHours(1))).runAt();
        String[][] cases = {
                { "{}", "delayMs" },
                { "{\"delayMs\":1000,\"runAt\":\"2030-01-01T00:00:00Z\"}", "runAt" },
                { "{\"delayMs\":-1}", "delayMs" },
                { "{\"delayMs\":\"5\"}", "delayMs" },
                { "{\"delayMs\":1.5}", "delayMs" },
                { "{\"delayMs\":" + (366L * DAY_MS) + "}", "delayMs" },
                { "{\"runAt\":\"tomorrow\"}", "runAt" },
                { "{\"runAt\":\"" + Instant.now().plus(Duration.ofDays(400)) + "\"}", "runAt" },
                { "{\"runAt\":\"1969-12-31T23:59:59Z\"}", "runAt" },
                { "{\"runAt\":5}", "runAt" },
                { "{\"when\":5}", "when" },
                { "[1]", "body" },
                { "{\"delayMs\":", "body" },
                { "", "body" },
        };
        for (String[] c : cases) {
            patch(topic, "j", c[0]).then().statusCode(400).contentType("application/problem+json")
                    .body("field", equalTo(c[1]));
        }
        patch("UPPER", "j", "{\"delayMs\":0}").then().statusCode(400).body("field", equalTo("topic"));
        patch(topic, "bad%20id", "{\"delayMs\":0}").then().statusCode(400).body("field", equalTo("id"));
        assertEquals(at, inspection.get(topic, "j").orElseThrow().runAt(), "nothing moved");

        InvalidJobException e = assertThrows(InvalidJobException.class,
                () -> jobs.reschedule(topic, "j", Instant.now().plus(Duration.ofDays(400))));
        assertEquals("runAt", e.field());
        e = assertThrows(InvalidJobException.class, () -> jobs.reschedule(topic, "j", Duration.ofMillis(-1)));
        assertEquals("delayMs", e.field());
    }

    @Test
    void rescheduleKeepsAttemptsLastErrorAndMaxAttempts() {
        String topic = Topics.fresh("resched-keeps");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("k").payload(Map.of("n", 7)).maxAttempts(5).delay(Duration.ZERO));
        Lease l = store.take(p, 1, 30_000, "T:", new HashSet<>(), List.of(), 0).jobs().get(0).lease();
        store.fail(p, l, 3_600_000, "first failure", 10);
        JobInfo moved = jobs.reschedule(topic, "k", Duration.ofMinutes(5)).job();
        assertEquals(1, moved.attempts());
        assertEquals(5, moved.maxAttempts());
        assertEquals("first failure", moved.lastError());
        var taken = store.take(p, 1, 30_000, "U:", new HashSet<>(), List.of(), 0);
        assertEquals(0, taken.jobs().size(), "due in 5 min, not now");
        jobs.runNow(topic, "k");
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> !store.take(p, 1, 30_000, "V:",
                new HashSet<>(), List.of(), 0).jobs().isEmpty());
        assertEquals(JobState.INFLIGHT, inspection.get(topic, "k").orElseThrow().state());
    }
}
