package io.delayq.store;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

/**
 * Lost attempts (a lease that expired without an outcome), driven through the scripts on topics
 * no replica serves: counted apart from attempts, dead after max lost attempts in a row, never
 * reclaimed from the caller itself, and readable both ways across the record format change.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class LostAttemptsTest {
    private static final String TRACE = "0af7651916cd43dd8448eb211c80319c" + "b7ad6b7169203331" + "01";
    @Inject
    Jobs jobs;
    @Inject
    JobQueue store;
    @Inject
    Inspection inspection;

    @Test
    void aLostAttemptIsCountedApartUsesNoAttemptAndShowsInTheApi() {
        String topic = Topics.fresh("lost-apart");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("j").delay(Duration.ZERO));
        loseLease(p, topic, "j", "A:1:");
        assertEquals(1, reclaim(p, 100, 3, List.of())[0]);

        JobInfo info = inspection.get(topic, "j").orElseThrow();
        assertEquals(JobState.SCHEDULED, info.state());
        assertEquals(0, info.attempts(), "a lost attempt does not use up maxAttempts");
        assertEquals(1, info.lostAttempts());
        assertTrue(info.lastError().startsWith("lease expired"), info.lastError());
        given().get("/jobs/" + topic + "/j").then().statusCode(200).body("lostAttempts", equalTo(1))
                .body("attempts", equalTo(0));
        given().get("/delayq/job?topic=" + topic + "&id=j").then().statusCode(200)
                .body(containsString("lost attempts"));
        TakenJob again = store.take(p, 1, 30_000, "B:1:", new HashSet<>(), List.of(), 0).jobs().get(0);
        assertEquals(0, again.record().attempts(), "the next run is attempt 1 again");
        assertEquals(1, again.record().lostAttempts());
    }

    @Test
    void theLossThatReachesMaxLostAttemptsInARowMovesTheJobToDeadSayingSo() {
        String topic = Topics.fresh("lost-dead");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("crasher").delay(Duration.ZERO).maxAttempts(1));
        for (int i = 1; i <= 2; i++) {
            loseLease(p, topic, "crasher", "A:" + i + ":");
            assertEquals(1, reclaim(p, 100, 3, List.of())[0], "loss " + i + " is retried, though maxAttempts is 1");
        }
        loseLease(p, topic, "crasher", "A:3:");
        int[] r = reclaim(p, 100, 3, List.of());
        assertEquals(0, r[0]);
        assertEquals(1, r[1], "the third loss in a row is the last");

        JobInfo dead = inspection.get(topic, "crasher").orElseThrow();
        assertEquals(JobState.DEAD, dead.state());
        assertEquals(3, dead.lostAttempts());
        assertEquals(0, dead.attempts());
        assertTrue(dead.lastError().contains("3 time(s) in a row") && dead.lastError().contains("max-lost-attempts"),
                dead.lastError());
        DeadJob listed = inspection.dead(topic, 10).get(0);
        assertEquals(3, listed.record().lostAttempts(), "kept in the dead record (the dead-job callback reads it)");
        try (Resp redis = RedisTestResource.resp()) {
            assertNull(redis.str("ZSCORE", Topics.keys(topic) + "inflight", "crasher"));
            assertNull(redis.str("HGET", Topics.keys(topic) + "leases", "crasher"));
        }

        inspection.revive(topic, "crasher");
        assertEquals(0, inspection.get(topic, "crasher").orElseThrow().lostAttempts(), "a requeue from dead starts afresh");
    }

    @Test
    void aReportedFailureEndsARunOfLostAttemptsButASnoozeDoesNot() {
        String topic = Topics.fresh("lost-reset");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("j").delay(Duration.ZERO));
        loseLease(p, topic, "j", "A:1:");
        reclaim(p, 100, 3, List.of());

        TakenJob snoozing = take(p, topic, "j", "B:1:");
        assertTrue(store.snooze(p, snoozing.lease(), false, 0).isPresent());
        assertEquals(1, inspection.get(topic, "j").orElseThrow().lostAttempts(),
                "a snooze costs no attempt, so it must not end the run: a job that snoozes and then crashes its "
                        + "replica would never reach max lost attempts");

        TakenJob failing = take(p, topic, "j", "C:1:");
        assertEquals(FailOutcome.Kind.RETRY, store.fail(p, failing.lease(), 0, "boom", 10).kind());
        JobInfo failed = inspection.get(topic, "j").orElseThrow();
        assertEquals(0, failed.lostAttempts(), "a reported failure ends the run");
        assertEquals(1, failed.attempts());
        assertEquals("boom", failed.lastError());
    }

    @Test
    void aLostAttemptWaitsTheBackoffOfItsNumberInTheRun() {
        String topic = Topics.fresh("lost-backoff");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("j").delay(Duration.ZERO));
        loseLease(p, topic, "j", "A:1:");
        assertEquals(1, store.reclaim(p, 100, 10, 5, List.of(), 0, 0, 1.0, 0, 0)[0]);
        loseLease(p, topic, "j", "A:2:");
        try (Resp redis = RedisTestResource.resp()) {
            long before = redisNow(redis);
            // initial 10 s, doubling: the second loss waits 20 s
            assertEquals(1, store.reclaim(p, 100, 10, 5, List.of(), 0, 10_000, 2.0, 600_000, 0)[0]);
            long runAt = inspection.get(topic, "j").orElseThrow().runAt().toEpochMilli();
            assertTrue(runAt >= before + 19_000 && runAt <= redisNow(redis) + 20_000,
                    "due 20 s after the second loss: " + (runAt - before) + " ms");
        }
    }

    @Test
    void aLostAttemptOfAJobWithItsOwnRetryWaitsItsBackoffAndItsNeighbourTheTopics() {
        String topic = Topics.fresh("lost-own-retry");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("own").delay(Duration.ZERO)
                .retry(Duration.ofMillis(200), Duration.ofMillis(400)));
        jobs.schedule(JobRequest.topic(topic).id("topic").delay(Duration.ZERO));
        // The topic's backoff: 10 s doubling to 10 min, no jitter. The job's: 200 ms doubling to 400.
        long[][] expected = { { 200, 10_000 }, { 400, 20_000 }, { 400, 40_000 } };
        try (Resp redis = RedisTestResource.resp()) {
            for (int loss = 0; loss < expected.length; loss++) {
                loseLeases(p, topic, "A:" + loss + ":", "own", "topic");
                long before = redisNow(redis);
                assertEquals(2, store.reclaim(p, 100, 10, 5, List.of(), 0, 10_000, 2.0, 600_000, 0)[0]);
                long after = redisNow(redis);
                assertDueAfter(topic, "own", before, after, expected[loss][0], "own backoff, loss " + (loss + 1));
                assertDueAfter(topic, "topic", before, after, expected[loss][1], "topic's backoff, loss " + (loss + 1));
                // Due again now, to be lost again (a reschedule keeps the record's counts and retry).
                inspection.reschedule(topic, "own", true, 0);
                inspection.reschedule(topic, "topic", true, 0);
            }
            JobInfo own = inspection.get(topic, "own").orElseThrow();
            assertEquals(3, own.lostAttempts());
            assertEquals(new io.delayq.core.JobRetry(200L, 400L), own.retry(), "kept through the reclaims");
        }
    }

    @Test
    void aLostAttemptWithOnlyOneOwnBoundMovesTheTopicsOtherToMeetIt() {
        String topic = Topics.fresh("lost-own-half");
        Partition p = store.partitionsOf(topic).get(0);
        // Topic: 10 s initial, max 60 s. A max of 300 ms lowers the initial delay to it; an
        // initial delay of 90 s raises the max to it.
        jobs.schedule(JobRequest.topic(topic).id("short").delay(Duration.ZERO).retry(null, Duration.ofMillis(300)));
        jobs.schedule(JobRequest.topic(topic).id("long").delay(Duration.ZERO).retry(Duration.ofSeconds(90), null));
        try (Resp redis = RedisTestResource.resp()) {
            loseLeases(p, topic, "A:1:", "short", "long");
            long before = redisNow(redis);
            assertEquals(2, store.reclaim(p, 100, 10, 5, List.of(), 0, 10_000, 2.0, 60_000, 0)[0]);
            long after = redisNow(redis);
            assertDueAfter(topic, "short", before, after, 300, "max alone");
            assertDueAfter(topic, "long", before, after, 90_000, "initial alone");
        }
    }

    @Test
    void aJobsOwnBackoffReachingADayThatWasNotPassedIsNamedBeforeAnyWriteAndMovedOnTheCallAgain() {
        String topic = Topics.fresh("lost-own-day");
        Partition p = store.partitionsOf(topic).get(0);
        long threeDays = Duration.ofDays(3).toMillis();
        jobs.schedule(JobRequest.topic(topic).id("near").delay(Duration.ZERO));
        jobs.schedule(JobRequest.topic(topic).id("far").delay(Duration.ZERO).retry(Duration.ofDays(3), null));
        try (Resp redis = RedisTestResource.resp()) {
            // "near" (the topic's 1 s) comes first: had it been moved before the script found the
            // day of "far" missing, the call run again would see only "far".
            loseLeases(p, topic, "A:1:", "near", "far");
            long before = redisNow(redis);
            // Java passes the days up to the topic's 1 s max: not the day three days on.
            int[] r = store.reclaim(p, 100, 10, 5, List.of(), 0, 1_000, 2.0, 1_000, 0);
            long after = redisNow(redis);
            assertEquals(2, r[0], "both moved by the one call, in the run that had every day");
            assertDueAfter(topic, "near", before, after, 1_000, "the topic's backoff");
            assertDueAfter(topic, "far", before, after, threeDays, "its own, three days on");
            long runAt = inspection.get(topic, "far").orElseThrow().runAt().toEpochMilli();
            int day = Keys.dayOf(runAt);
            String k = Topics.keys(topic);
            assertEquals(Long.toString(runAt), redis.str("ZSCORE", k + "due:" + day, "far"), "in its day's shard");
            assertNotNull(redis.str("ZSCORE", k + "days", Integer.toString(day)), "and the day listed");
            assertEquals(1, inspection.get(topic, "near").orElseThrow().lostAttempts(), "counted once");
            assertEquals(1, inspection.get(topic, "far").orElseThrow().lostAttempts());
        }
    }

    @Test
    void aRetryTextTheRecordCannotMeanIsNoneAndTheLostAttemptWaitsTheTopics() {
        String topic = Topics.fresh("lost-own-bad");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("j").delay(Duration.ofHours(1)));
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(topic);
            String rec = Long.toString(System.currentTimeMillis(), 36) + ",0,0,\u001dx,5\u001dboom\n{}";
            assertNull(JobRecord.decode(rec).retry(), "Java reads no retry in it");
            redis.call("HSET", k + "jobs", "j", rec);
            redis.call("ZADD", k + "inflight", "1000", "j");
            redis.call("HSET", k + "leases", "j", "X:1:0");
            long before = redisNow(redis);
            assertEquals(1, store.reclaim(p, 100, 10, 5, List.of(), 0, 10_000, 2.0, 600_000, 0)[0]);
            assertDueAfter(topic, "j", before, redisNow(redis), 10_000, "the topic's backoff");
        }
    }

    @Test
    void reclaimSkipsLeasesItsCallerHoldsAndScansPastThem() {
        String topic = Topics.fresh("lost-own");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("mine").delay(Duration.ZERO));
        jobs.schedule(JobRequest.topic(topic).id("theirs").delay(Duration.ZERO));
        TakenJob mine = take(p, topic, "mine", "me:1:");
        TakenJob theirs = take(p, topic, "theirs", "other:1:");
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(topic);
            // Both expired, ours first in the scan.
            redis.call("ZADD", k + "inflight", "1000", "mine");
            redis.call("ZADD", k + "inflight", "2000", "theirs");
            assertTrue(theirs.lease().token().startsWith("other:"));
            List<String> ours = List.of(mine.lease().token());
            int[] r = reclaim(p, 1, 3, ours);
            assertEquals(1, r[0], "the other holder's lease is reclaimed though ours came first and the limit is 1");
            assertEquals(mine.lease().token(), redis.str("HGET", k + "leases", "mine"), "ours is left alone");
            assertNotNull(redis.str("ZSCORE", k + "inflight", "mine"));
            assertEquals(JobState.SCHEDULED, inspection.get(topic, "theirs").orElseThrow().state());
            assertEquals(0, inspection.get(topic, "theirs").orElseThrow().attempts());
            assertEquals("1000", redis.str("GET", k + "leasenext"),
                    "the bound still points at our expired lease, for the other replicas should we be gone");
            assertEquals(0, reclaim(p, 100, 3, ours)[0], "ours is skipped again");
            // Once we no longer hold it (an outcome we could not record), our own expired lease is
            // reclaimed like anyone's, by us too: nobody else may serve the topic.
            assertEquals(1, reclaim(p, 100, 3, List.of())[0], "an expired lease nobody holds is reclaimed");
            assertEquals(1, inspection.get(topic, "mine").orElseThrow().lostAttempts());
        }
    }

    @Test
    void aRecordOfAReleaseBeforeLostAttemptsReadsAsNoneLostAndKeepsItsTrace() {
        String topic = Topics.fresh("lost-old");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("old").delay(Duration.ofHours(1)));
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(topic);
            // As the previous release wrote it: 2 attempts, max 5, a traced error; in flight,
            // its lease expired.
            String old = Long.toString(System.currentTimeMillis(), 36) + ",2,5,\u001e" + TRACE + "boom\n{\"a\":1}";
            redis.call("HSET", k + "jobs", "old", old);
            redis.call("ZADD", k + "inflight", "1000", "old");
            redis.call("HSET", k + "leases", "old", "X:1:0");
            JobRecord before = JobRecord.decode(old);
            assertEquals(0, before.lostAttempts());
            assertEquals("boom", before.lastError());

            assertEquals(1, reclaim(p, 100, 3, List.of())[0]);
            String written = redis.str("HGET", k + "jobs", "old");
            JobRecord after = JobRecord.decode(written);
            assertEquals(1, after.lostAttempts());
            assertEquals(2, after.attempts());
            assertEquals(5, after.maxAttempts());
            assertEquals(TRACE, after.trace(), "the trace context stays in front");
            assertEquals("{\"a\":1}", after.payload());

            // What a release before lost attempts makes of the new record: the same fields, the
            // count read as part of the error text.
            String[] head = written.substring(0, written.indexOf('\n')).split(",", 4);
            assertEquals(2, Integer.parseInt(head[1]));
            assertEquals(5, Integer.parseInt(head[2]));
            assertTrue(head[3].startsWith("\u001e" + TRACE + "\u001f1\u001flease expired"), head[3]);
        }
    }

    @Test
    void aRecordWithLostAttemptsAndNoTraceOrErrorRoundTrips() {
        JobRecord r = JobRecord.decode("k,0,0,\u001f2\u001f\n{}");
        assertEquals(2, r.lostAttempts());
        assertEquals("", r.lastError());
        assertEquals("", r.trace());
        JobRecord notACount = JobRecord.decode("k,0,0,\u001fx\u001fboom\n{}");
        assertEquals(0, notACount.lostAttempts());
        assertEquals("\u001fx\u001fboom", notACount.lastError(), "left as text, as an older release reads it");
    }

    @Test
    void aReclaimThatRedisRunsAfterItsDeadlineReclaimsNothing() {
        String topic = Topics.fresh("lost-late");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("late").delay(Duration.ZERO));
        take(p, topic, "late", "h:1:");
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(topic);
            redis.call("ZADD", k + "inflight", "1000", "late");
            long past = store.redisTimeMs() - 1;
            assertEquals(0, store.reclaim(p, 100, 10, 3, List.of(), past, 0, 1.0, 0, 0)[0],
                    "run after its deadline: the holders' extends may be queued behind it");
            assertEquals(JobState.INFLIGHT, inspection.get(topic, "late").orElseThrow().state());
            assertEquals("1000", redis.str("GET", k + "leasenext"), "the bound is still corrected");
            assertEquals(1, store.reclaim(p, 100, 10, 3, List.of(), store.redisTimeMs() + 5_000, 0, 1.0, 0, 0)[0]);
        }
    }

    @Test
    void anUnreadableRecordGoesToDeadInsteadOfBlockingEveryReclaimOfItsPartition() {
        String topic = Topics.fresh("lost-bad");
        Partition p = store.partitionsOf(topic).get(0);
        jobs.schedule(JobRequest.topic(topic).id("ok").delay(Duration.ofHours(1)));
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(topic);
            redis.call("HSET", k + "jobs", "bad", "no newline, no fields");
            redis.call("ZADD", k + "inflight", "1000", "bad");
            redis.call("HSET", k + "leases", "bad", "X:1:0");
            redis.call("ZADD", k + "inflight", "2000", "ok");
            redis.call("HSET", k + "leases", "ok", "X:1:1");
            int[] r = reclaim(p, 100, 3, List.of());
            assertEquals(1, r[0], "the readable one behind it is reclaimed");
            assertEquals(1, r[1], "the unreadable one is buried");
            JobRecord buried = JobRecord.decode(redis.str("HGET", k + "jobs", "bad"));
            assertEquals("\"no newline, no fields\"", buried.payload(), "its text kept, as a JSON string");
            assertTrue(buried.lastError().startsWith("unreadable record"), buried.lastError());
            assertEquals(JobState.DEAD, inspection.get(topic, "bad").orElseThrow().state());
        }
    }

    private int[] reclaim(Partition p, int limit, int maxLost, List<String> held) {
        return store.reclaim(p, limit, 10, maxLost, held, 0, 0, 1.0, 0, 0);
    }

    private TakenJob take(Partition p, String topic, String id, String tokenPrefix) {
        TakenJob t = store.take(p, 1, 30_000, tokenPrefix, new HashSet<>(), List.of(), 0).jobs().get(0);
        assertEquals(id, t.lease().id());
        return t;
    }

    /** Takes the job (due now) under a lease that has expired at once: its holder "died". */
    private void loseLease(Partition p, String topic, String id, String tokenPrefix) {
        Set<Integer> older = new HashSet<>();
        Awaitility.await().atMost(Duration.ofSeconds(5))
                .until(() -> !store.take(p, 1, 1, tokenPrefix, older, List.of(), 0).jobs().isEmpty());
        try (Resp redis = RedisTestResource.resp()) {
            redis.call("ZADD", Topics.keys(topic) + "inflight", "1000", id);
        }
    }

    /**
     * Takes the jobs (all due now) under leases that expired at once, in the given order of
     * their deadlines: their holder "died".
     */
    private void loseLeases(Partition p, String topic, String tokenPrefix, String... ids) {
        Set<Integer> older = new HashSet<>();
        Set<String> taken = new HashSet<>();
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
            store.take(p, ids.length, 1, tokenPrefix, older, List.of(), 0).jobs().forEach(t -> taken.add(t.lease().id()));
            return taken.size() == ids.length;
        });
        assertEquals(Set.of(ids), taken);
        try (Resp redis = RedisTestResource.resp()) {
            for (int i = 0; i < ids.length; i++) {
                redis.call("ZADD", Topics.keys(topic) + "inflight", Integer.toString(1000 * (i + 1)), ids[i]);
            }
        }
    }

    /** The job is scheduled delayMs (no jitter) after a reclaim that ran between before and after (Redis ms). */
    private void assertDueAfter(String topic, String id, long before, long after, long delayMs, String what) {
        JobInfo info = inspection.get(topic, id).orElseThrow();
        assertEquals(JobState.SCHEDULED, info.state(), what);
        long runAt = info.runAt().toEpochMilli();
        assertTrue(runAt >= before + delayMs && runAt <= after + delayMs,
                what + ": due " + (runAt - before) + " ms after the reclaim began, expected " + delayMs);
    }

    private static long redisNow(Resp redis) {
        List<?> t = redis.list("TIME");
        return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000;
    }
}
