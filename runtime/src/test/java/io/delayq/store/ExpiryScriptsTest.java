package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.IfExists;
import io.delayq.core.InvalidJobException;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.JobValidator;
import io.delayq.core.NewJob;
import io.delayq.core.RescheduleResult;
import io.delayq.dev.Resp;

/**
 * A job's own limits (enqueue's {@code timeoutMs} and {@code expiresAt}) in the scripts: kept
 * through every move, and every step that would make the job due after its expiresAt (the take of
 * a job not started by then, a retry, a snooze, a lost attempt's rerun, a reschedule, an extend)
 * sends it to the dead set as expired; a requeue from the dead set clears it.
 */
class ExpiryScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured("delayq.topics.exp-grp.group-max-in-flight", "1");
    private static final Map<String, AtomicInteger> EXPIRED = new ConcurrentHashMap<>();
    static {
        STORE.layer.onExpired((topic, n) -> EXPIRED.computeIfAbsent(topic, t -> new AtomicInteger()).addAndGet(n));
    }
    /** A topic that keeps one dead job: each burial trims the one before. */
    private static final String TRIM = "exp-trim";
    private static final HandBuiltStore CAPPED = HandBuiltStore.configured("delayq.topics." + TRIM + ".dead.max-jobs", "1");
    /** A store whose calls give up after 300 ms: a take sent while Redis holds writes answers late. */
    private static final HandBuiltStore IMPATIENT = HandBuiltStore.configured("delayq.redis-timeout", "300ms");
    private static final List<String> TRIMMED = new java.util.concurrent.CopyOnWriteArrayList<>();
    static {
        CAPPED.layer.onExpired((topic, n) -> EXPIRED.computeIfAbsent(topic, t -> new AtomicInteger()).addAndGet(n));
        CAPPED.layer.onDeadTrimmed((topic, ids) -> ids.forEach(id -> TRIMMED.add(topic + "/" + id)));
        IMPATIENT.layer.onExpired((topic, n) -> EXPIRED.computeIfAbsent(topic, t -> new AtomicInteger()).addAndGet(n));
    }
    private final JobQueue store = STORE.queue;
    private final Inspection inspection = STORE.inspection;
    private final JobValidator validator = new JobValidator(STORE.config, new RedisClock());

    private NewJob schedule(JobRequest request) {
        NewJob job = validator.validate(request, new ObjectMapper());
        store.enqueue(store.partitionOf(job.topic(), job.id(), job.group()), List.of(job), "");
        return job;
    }

    private static long redisNow() {
        try (Resp redis = HandBuiltStore.resp()) {
            List<Object> t = redis.list("TIME");
            return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000;
        }
    }

    private static void awaitRedisPast(long ms) {
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> redisNow() > ms);
    }

    private TakenJob takeOne(Partition p, long leaseMs) {
        List<TakenJob> jobs = store.take(p, 1, leaseMs, "x" + System.nanoTime() + ":", new HashSet<>(), List.of(), 0).jobs();
        assertEquals(1, jobs.size(), "one job taken");
        return jobs.get(0);
    }

    /** Job "j" of the topic, expiring in a minute, taken under a lease of leaseMs. */
    private TakenJob takenExpiringInAMinute(String topic, long leaseMs) {
        schedule(JobRequest.topic(topic).id("j").expiresAt(Instant.ofEpochMilli(redisNow() + 60_000)).maxAttempts(5));
        return takeOne(store.partitionsOf(topic).get(0), leaseMs);
    }

    private JobInfo job(String topic, String id) {
        return inspection.get(topic, id).orElseThrow();
    }

    private static int expired(String topic) {
        AtomicInteger n = EXPIRED.get(topic);
        return n == null ? 0 : n.get();
    }

    @Test
    void aDueJobPastItsExpiresAtIsBuriedByTheTakeWithoutUsingASlot() {
        String topic = HandBuiltStore.fresh("exp-take");
        Partition p = store.partitionsOf(topic).get(0);
        Instant expires = Instant.ofEpochMilli(redisNow() + 300);
        schedule(JobRequest.topic(topic).id("late").runAt(Instant.now().minusSeconds(60)).expiresAt(expires));
        schedule(JobRequest.topic(topic).id("ok").runAt(Instant.now().minusSeconds(30)));
        awaitRedisPast(expires.toEpochMilli());
        TakeResult r = store.take(p, 1, 30_000, "t:", new HashSet<>(), List.of(), 0);
        assertEquals(List.of("ok"), r.jobs().stream().map(j -> j.lease().id()).toList(), "the slot went to the live job");
        JobInfo late = job(topic, "late");
        assertEquals(JobState.DEAD, late.state());
        assertEquals("expired: not started by expiresAt", late.lastError());
        assertEquals(1, expired(topic));
        assertEquals(0, store.take(p, 10, 30_000, "u:", new HashSet<>(), List.of(), 0).jobs().size(), "nothing left due");
    }

    @Test
    void aDueJobWithAPayloadAbove32KbIsLookedAtByItsHeadOnly_andStillBuriedOrTaken() {
        String topic = HandBuiltStore.fresh("exp-big");
        Partition p = store.partitionsOf(topic).get(0);
        String big = "x".repeat(40_000); // above take.lua's HEAD_ONLY_ABOVE (32 KB)
        Instant expires = Instant.ofEpochMilli(redisNow() + 300);
        schedule(JobRequest.topic(topic).id("late").payload(big).runAt(Instant.now().minusSeconds(60)).expiresAt(expires));
        schedule(JobRequest.topic(topic).id("ok").payload(big).runAt(Instant.now().minusSeconds(30)));
        awaitRedisPast(expires.toEpochMilli());
        TakeResult r = store.take(p, 10, 30_000, "t:", new HashSet<>(), List.of(), 0);
        assertEquals(List.of("ok"), r.jobs().stream().map(j -> j.lease().id()).toList());
        assertEquals("expired: not started by expiresAt", job(topic, "late").lastError());
        assertEquals(1, expired(topic));
    }

    @Test
    void aGroupsDueJobPastItsExpiresAtIsBuriedAndTheGroupsNextRuns() {
        String topic = "exp-grp";
        Partition p = store.partitionOf(topic, "g1", "g");
        Instant expires = Instant.ofEpochMilli(redisNow() + 300);
        schedule(JobRequest.topic(topic).id("g1").group("g").runAt(Instant.now().minusSeconds(60)).expiresAt(expires));
        schedule(JobRequest.topic(topic).id("g2").group("g").runAt(Instant.now().minusSeconds(30)));
        awaitRedisPast(expires.toEpochMilli());
        TakenJob taken = takeOne(p, 30_000);
        assertEquals("g2", taken.lease().id(), "the expired job took no slot of its group");
        assertEquals(JobState.DEAD, job(topic, "g1").state());
    }

    @Test
    void aRetryDueAfterExpiresAtGoesToDeadWithTheAttemptsError() {
        String topic = HandBuiltStore.fresh("exp-fail");
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = takenExpiringInAMinute(topic, 30_000);
        assertEquals(FailOutcome.Kind.DEAD, store.fail(p, taken.lease(), 120_000, "boom", 5).kind());
        JobInfo j = job(topic, "j");
        assertEquals(JobState.DEAD, j.state());
        assertEquals("expired: boom", j.lastError());
        assertEquals(1, expired(topic));
    }

    @Test
    void aRetryBeforeExpiresAtIsARetryAndKeepsTheLimits() {
        String topic = HandBuiltStore.fresh("exp-retry");
        Partition p = store.partitionsOf(topic).get(0);
        Instant expires = Instant.ofEpochMilli(redisNow() + 600_000);
        schedule(JobRequest.topic(topic).id("j").expiresAt(expires).timeout(Duration.ofMillis(1500)).maxAttempts(5));
        TakenJob taken = takeOne(p, 30_000);
        assertEquals(1500L, taken.record().timeoutMs(), "the take hands the runner the job's own timeout");
        assertEquals(FailOutcome.Kind.RETRY, store.fail(p, taken.lease(), 1_000, "boom", 5).kind());
        JobInfo j = job(topic, "j");
        assertEquals(JobState.SCHEDULED, j.state());
        assertEquals("boom", j.lastError());
        assertEquals(expires, j.expiresAt(), "kept through the retry");
        assertEquals(1500L, j.timeoutMs());
    }

    @Test
    void aSnoozePastExpiresAtGoesToDead() {
        String topic = HandBuiltStore.fresh("exp-snooze");
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = takenExpiringInAMinute(topic, 30_000);
        assertTrue(store.snooze(p, taken.lease(), false, 120_000).isEmpty());
        JobInfo j = job(topic, "j");
        assertEquals(JobState.DEAD, j.state());
        assertEquals("expired: snoozed past expiresAt", j.lastError());
    }

    @Test
    void aLostAttemptWhoseRerunWouldComeAfterExpiresAtGoesToDead() {
        String topic = HandBuiltStore.fresh("exp-reclaim");
        Partition p = store.partitionsOf(topic).get(0);
        TakenJob taken = takenExpiringInAMinute(topic, 1);
        awaitRedisPast(redisNow() + 5);
        int[] r = store.reclaim(p, 100, 10, 3, List.of(), 0, 120_000, 1.0, 120_000, 0);
        assertEquals(List.of(0, 1), List.of(r[0], r[1]), "buried, not put back: " + List.of(r[0], r[1]));
        JobInfo j = job(topic, "j");
        assertEquals(JobState.DEAD, j.state());
        assertTrue(j.lastError().startsWith("expired: lease expired"), j.lastError());
        assertEquals(List.of("j"), store.ack(p, List.of(taken.lease())), "the gone holder's late ack is stale");
        assertEquals(1, expired(topic));
    }

    @Test
    void aRescheduleOrExtendPastExpiresAtGoesToDeadAndAReviveClearsIt() {
        String topic = HandBuiltStore.fresh("exp-move");
        Instant expires = Instant.ofEpochMilli(redisNow() + 600_000);
        schedule(JobRequest.topic(topic).id("a").delay(Duration.ofMinutes(1)).expiresAt(expires));
        assertEquals(RescheduleResult.Outcome.RESCHEDULED,
                inspection.reschedule(topic, "a", true, 120_000).outcome(), "within expiresAt: moved");
        assertEquals(JobState.SCHEDULED, job(topic, "a").state());
        RescheduleResult late = inspection.reschedule(topic, "a", true, 3_600_000);
        assertEquals(JobState.DEAD, late.job().state());
        assertEquals("expired: rescheduled past expiresAt", job(topic, "a").lastError());

        // An extend keeps the later runAt it finds: after the request's expiresAt.
        schedule(JobRequest.topic(topic).id("b").delay(Duration.ofHours(1)));
        NewJob ext = validator.validate(JobRequest.topic(topic).id("b").delay(Duration.ofMinutes(1)).expiresAt(expires)
                .ifExists(IfExists.EXTEND), new ObjectMapper());
        JobInfo answer = store.enqueue(store.partitionOf(topic, "b", null), List.of(ext), "").get(0);
        assertEquals(JobState.DEAD, answer.state());
        assertTrue(answer.replaced());
        assertEquals(JobState.DEAD, job(topic, "b").state());
        assertEquals("expired: replaced or extended past expiresAt", job(topic, "b").lastError());
        assertEquals(2, expired(topic));

        // A requeue from the dead set clears expiresAt: the job runs.
        assertTrue(inspection.revive(topic, "a").isPresent());
        JobInfo revived = job(topic, "a");
        assertEquals(JobState.SCHEDULED, revived.state());
        assertNull(revived.expiresAt());
        assertEquals("a", takeOne(store.partitionOf(topic, "a", null), 30_000).lease().id());
    }

    @Test
    void aBulkReschedulePastExpiresAtBuriesThoseItWouldMakeLate() {
        String topic = HandBuiltStore.fresh("exp-bulk");
        schedule(JobRequest.topic(topic).id("m1").delay(Duration.ofMinutes(1))
                .expiresAt(Instant.ofEpochMilli(redisNow() + 300_000)));
        schedule(JobRequest.topic(topic).id("m2").delay(Duration.ofMinutes(1)));
        long moved = new BulkActions(STORE.layer).reschedule(topic, new JobListing.Filter("m", null, null, null), true,
                3_600_000);
        assertEquals(2, moved);
        assertEquals(JobState.DEAD, job(topic, "m1").state());
        assertEquals(JobState.SCHEDULED, job(topic, "m2").state());
    }

    @Test
    void theDeadJobsTrimmedByTheBurialsOfARescheduleABulkRescheduleAndAnExtendAreCounted() {
        JobValidator capped = new JobValidator(CAPPED.config, new RedisClock());
        java.util.function.Function<JobRequest, NewJob> valid = r -> capped.validate(r, new ObjectMapper());
        Instant expires = Instant.ofEpochMilli(redisNow() + 600_000);
        for (String id : List.of("t1", "t2")) {
            NewJob job = valid.apply(JobRequest.topic(TRIM).id(id).delay(Duration.ofMinutes(1)).expiresAt(expires));
            CAPPED.queue.enqueue(CAPPED.queue.partitionOf(TRIM, id, null), List.of(job), "");
        }
        NewJob t3 = valid.apply(JobRequest.topic(TRIM).id("t3").delay(Duration.ofHours(1)));
        CAPPED.queue.enqueue(CAPPED.queue.partitionOf(TRIM, "t3", null), List.of(t3), "");

        assertEquals(JobState.DEAD, CAPPED.inspection.reschedule(TRIM, "t1", true, 3_600_000).job().state());
        assertEquals(List.of(), TRIMMED, "the first dead job trims nothing");
        new BulkActions(CAPPED.layer).reschedule(TRIM, new JobListing.Filter("t2", null, null, null), true, 3_600_000);
        assertEquals(List.of(TRIM + "/t1"), TRIMMED, "the bulk reschedule's burial trimmed t1");
        NewJob ext = valid.apply(JobRequest.topic(TRIM).id("t3").delay(Duration.ofMinutes(1)).expiresAt(expires)
                .ifExists(IfExists.EXTEND));
        assertEquals(JobState.DEAD, CAPPED.queue.enqueue(CAPPED.queue.partitionOf(TRIM, "t3", null), List.of(ext), "")
                .get(0).state());
        assertEquals(List.of(TRIM + "/t1", TRIM + "/t2"), TRIMMED, "the extend's burial trimmed t2");
        assertEquals(3, expired(TRIM));
    }

    @Test
    void aTakeThatAnswersAfterItsCallerGaveUpCountsTheJobsItBuriedAsExpired() {
        String topic = HandBuiltStore.fresh("exp-late");
        Partition p = IMPATIENT.queue.partitionsOf(topic).get(0);
        // Its scripts loaded and its layout checked first, while nothing is due (a NOSCRIPT fallback
        // would be a second call); a call slower than 300 ms on a loaded machine is tried again.
        Awaitility.await().atMost(Duration.ofSeconds(30)).ignoreExceptions()
                .until(() -> IMPATIENT.queue.take(p, 1, 30_000, "warm:", new HashSet<>(), List.of(), 0).jobs().isEmpty());
        Instant expires = Instant.ofEpochMilli(redisNow() + 300);
        schedule(JobRequest.topic(topic).id("late").runAt(Instant.now().minusSeconds(60)).expiresAt(expires));
        awaitRedisPast(expires.toEpochMilli());
        try (Resp redis = HandBuiltStore.resp()) {
            // Writes (scripts included) wait 2 s, well past the store's 300 ms: the take's caller gives up first.
            redis.str("CLIENT", "PAUSE", "2000", "WRITE");
            assertThrows(RuntimeException.class,
                    () -> IMPATIENT.queue.take(p, 1, 30_000, "late:", new HashSet<>(), List.of(), 0));
        }
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> expired(topic) == 1);
        assertEquals(JobState.DEAD, job(topic, "late").state());
    }

    @Test
    void aRecordOfTheReleaseBeforeLimitsStillDecodesAndRuns() {
        assertNull(JobRecord.decode("k3,1,3,boom\n{}").expiresAt());
        assertNull(JobRecord.decode("k3\n{}").timeoutMs());
        JobRecord both = JobRecord.decode("k3,0,0,\u001b250,1700000000000\u001bboom\n{}");
        assertEquals(250L, both.timeoutMs());
        assertEquals(1_700_000_000_000L, both.expiresAt());
        assertEquals("boom", both.lastError());

        String topic = HandBuiltStore.fresh("exp-old");
        Partition p = store.partitionsOf(topic).get(0);
        schedule(JobRequest.topic(topic).id("j").runAt(Instant.now().minusSeconds(5)).maxAttempts(3));
        try (Resp redis = HandBuiltStore.resp()) {
            // As the previous release wrote it: no limits.
            String k = HandBuiltStore.keysOf(topic);
            String rec = redis.str("HGET", k + "jobs", "j");
            redis.num("HSET", k + "jobs", "j", rec.substring(0, rec.indexOf('\n')) + ",boom\n{\"a\":1}");
        }
        TakenJob taken = takeOne(p, 30_000);
        assertNull(taken.record().expiresAt());
        assertNull(taken.record().timeoutMs());
        assertEquals(FailOutcome.Kind.RETRY, store.fail(p, taken.lease(), 600_000, "again", 3).kind());
        assertEquals("again", job(topic, "j").lastError());
    }

    @Test
    void badLimitsAreRefusedNamingTheField() {
        String topic = HandBuiltStore.fresh("exp-bad");
        ObjectMapper m = new ObjectMapper();
        assertEquals("timeoutMs", assertThrows(InvalidJobException.class,
                () -> validator.validate(JobRequest.topic(topic).timeout(Duration.ZERO), m)).field());
        assertEquals("timeoutMs", assertThrows(InvalidJobException.class,
                () -> validator.validate(JobRequest.topic(topic).timeout(Duration.ofHours(25)), m)).field());
        assertEquals("expiresAt", assertThrows(InvalidJobException.class, () -> validator.validate(
                JobRequest.topic(topic).delay(Duration.ofHours(1)).expiresAt(Instant.now().plusSeconds(60)), m)).field());
        assertEquals("expiresAt", assertThrows(InvalidJobException.class, () -> validator.validate(topic, null, null, null,
                null, null, null, null, null, null, "tomorrow")).field());
        assertEquals(86_400_000L, validator.validate(JobRequest.topic(topic).timeout(Duration.ofHours(24)), m).timeoutMs());
    }

    /**
     * One call that revives a dead id (replace) and then extends it past its expiresAt: the job is
     * dead again, in the dead set (a cold review found it left in no index: GET said scheduled, and
     * it never ran nor died).
     */
    @Test
    void aDeadIdRevivedThenExtendedPastItsExpiresAtInOneCallIsDeadInTheDeadSet() {
        String topic = HandBuiltStore.fresh("exp-revive");
        Partition p = store.partitionsOf(topic).get(0);
        schedule(JobRequest.topic(topic).id("j").maxAttempts(1));
        assertEquals(FailOutcome.Kind.DEAD, store.fail(p, takeOne(p, 30_000).lease(), 0, "boom", 1).kind());
        long now = redisNow();
        store.enqueue(p, List.of(
                new NewJob(topic, "j", true, 3_600_000, 0, "\"j\"", IfExists.REPLACE, null, null, null, null),
                new NewJob(topic, "j", true, 0, 0, "\"j\"", IfExists.EXTEND, null, null, null, now + 60_000)), "");
        assertEquals(JobState.DEAD, job(topic, "j").state());
        assertTrue(job(topic, "j").lastError().startsWith("expired"), job(topic, "j").lastError());
        try (Resp redis = HandBuiltStore.resp()) {
            assertTrue(redis.str("ZSCORE", STORE.keys.dead(p), "j") != null, "in the dead set");
        }
    }
}
