package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.junit.jupiter.api.Test;

import io.delayq.core.IdTakenException;
import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * One live job per id over a topic's partitions (issue 32): a job of a group lives in its group's
 * partition, so an id enqueued again with another group (or none) used to land in another
 * partition, unseen by the idempotence of the first. Its id's home partition now holds a claim
 * (see {@link IdClaims}). On a store of 4 partitions, as the issue tried it.
 */
class IdClaimsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured("delayq.partitions", "4", "delayq.prefix", "dq4p");
    private static final long HOUR = 3_600_000L;
    JobQueue queue = STORE.queue;
    Inspection inspection = STORE.inspection;
    Keys keys = STORE.keys;
    IdClaims idClaims = new IdClaims(STORE.layer);

    private static NewJob job(String topic, String id, String group, long delayMs) {
        return new NewJob(topic, id, true, delayMs, 0, "\"" + id + "\"", IfExists.KEEP, null, group);
    }

    private JobInfo enqueue(NewJob job) {
        return queue.enqueue(queue.partitionOf(job.topic(), job.id(), job.group()), List.of(job), "").get(0);
    }

    /** Jobs of the topic over all its partitions (records in jobs, whatever their state). */
    private long jobs(String topic) {
        return fields(topic, keys::jobs);
    }

    private long claims(String topic) {
        return fields(topic, keys::claims);
    }

    private long fields(String topic, java.util.function.Function<Partition, String> hash) {
        long n = 0;
        try (Resp redis = HandBuiltStore.resp()) {
            for (Partition p : queue.partitionsOf(topic)) {
                n += redis.num("HLEN", hash.apply(p));
            }
        }
        return n;
    }

    @Test
    void theIssuesRepro_eightIdsWithGroupGaThenGbThenNone_areEightJobs() {
        String topic = HandBuiltStore.fresh("claims");
        assertNotEquals(queue.partitionOf(topic, "x", "ga"), queue.partitionOf(topic, "x", "gb"),
                "the two groups must pick two partitions for the repro to mean anything");
        Partition ga = queue.partitionOf(topic, "x", "ga");
        int refused = 0;
        for (String group : new String[] { "ga", "gb", null }) {
            for (int i = 0; i < 8; i++) {
                NewJob job = job(topic, "id-" + i, group, HOUR);
                if ("ga".equals(group)) {
                    assertTrue(enqueue(job).created());
                } else if (group == null && queue.partitionOf(topic, job.id()).equals(ga)) {
                    assertFalse(enqueue(job).created(), "its home is ga's partition: the existing job");
                } else {
                    IdTakenException e = assertThrows(IdTakenException.class, () -> enqueue(job));
                    assertEquals("group", e.field());
                    assertEquals(409, e.status());
                    assertEquals("ga", e.existingGroup());
                    refused++;
                }
            }
        }
        assertEquals(8, jobs(topic), "one job per id, in ga's partition");
        assertTrue(refused >= 8, "every gb enqueue is refused, and the ungrouped ones whose home is not ga's: " + refused);
        for (int i = 0; i < 8; i++) {
            assertEquals("id-" + i, inspection.get(topic, "id-" + i).orElseThrow().id());
        }
    }

    @Test
    void theSameIdWithTheSameGroupIsThePlainIdempotentAnswer() {
        String topic = HandBuiltStore.fresh("claims");
        String id = idAwayFrom(topic, "ga");
        assertTrue(enqueue(job(topic, id, "ga", HOUR)).created());
        JobInfo again = enqueue(job(topic, id, "ga", HOUR));
        assertFalse(again.created());
        assertEquals(1, jobs(topic));
    }

    @Test
    void aJobOfNoGroupRefusesTheSameIdWithAGroup() {
        String topic = HandBuiltStore.fresh("claims");
        String id = idAwayFrom(topic, "ga");
        assertTrue(enqueue(job(topic, id, null, HOUR)).created());
        IdTakenException e = assertThrows(IdTakenException.class, () -> enqueue(job(topic, id, "ga", HOUR)));
        assertEquals("", e.existingGroup());
        assertEquals(1, jobs(topic));
        assertEquals(0, claims(topic), "a refused claim writes nothing");
    }

    @Test
    void aBatchWithAClaimedIdWritesNothingOfItsPartition() {
        String topic = HandBuiltStore.fresh("claims");
        String id = idAwayFrom(topic, "ga");
        assertTrue(enqueue(job(topic, id, "ga", HOUR)).created());
        Partition home = queue.partitionOf(topic, id);
        List<NewJob> batch = new ArrayList<>();
        for (int i = 0; batch.size() < 3; i++) {
            if (queue.partitionOf(topic, "other-" + i).equals(home)) {
                batch.add(job(topic, "other-" + i, null, HOUR));
            }
        }
        batch.add(job(topic, id, null, HOUR));
        assertThrows(IdTakenException.class, () -> queue.enqueue(home, batch, ""));
        assertEquals(1, jobs(topic), "nothing of the batch was written");
    }

    @Test
    void aJobThatEndedFreesItsId_andTheSweepDropsItsClaim() {
        String topic = HandBuiltStore.fresh("claims");
        String acked = idAwayFrom(topic, "ga");
        String cancelled = acked + "-c";
        while (queue.partitionOf(topic, cancelled).equals(queue.partitionOf(topic, "x", "ga"))) {
            cancelled = cancelled + "c";
        }
        Partition q = queue.partitionOf(topic, "x", "ga");
        assertTrue(enqueue(job(topic, acked, "ga", 0)).created());
        assertTrue(enqueue(job(topic, cancelled, "ga", HOUR)).created());
        assertEquals(2, claims(topic));
        // Acked in ga's partition: the claim left in its home is stale.
        List<Lease> taken = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 30_000;
        while (taken.isEmpty() && System.currentTimeMillis() < deadline) {
            queue.take(q, 10, 60_000, "t" + System.nanoTime() + ":", new java.util.TreeSet<>(), List.of(), 0).jobs()
                    .forEach(t -> taken.add(t.lease()));
        }
        assertEquals(acked, taken.get(0).id());
        assertTrue(queue.ack(q, taken).isEmpty());
        // Enqueued again with no group: accepted in its home, the stale claim dropped on the way.
        assertTrue(enqueue(job(topic, acked, null, HOUR)).created());
        assertEquals(queue.partitionOf(topic, acked), holder(topic, acked));
        // Cancelled: its claim stays until the sweep finds its job gone.
        assertEquals(io.delayq.core.CancelOutcome.CANCELLED, inspection.cancel(topic, cancelled));
        assertEquals(1, claims(topic));
        DeadSweep sweep = new DeadSweep(STORE.layer);
        assertEquals(1, sweep.sweepClaims(topic));
        assertEquals(0, claims(topic));
        assertEquals(0, sweep.sweepClaims(topic));
        // And with another group, once more: claimed anew (unless gb's partition is its home).
        assertTrue(enqueue(job(topic, cancelled, "gb", HOUR)).created());
        Partition gb = queue.partitionOf(topic, "x", "gb");
        assertEquals(gb, holder(topic, cancelled));
        assertEquals(gb.equals(queue.partitionOf(topic, cancelled)) ? 0 : 1, claims(topic));
    }

    @Test
    void twoEnqueuesOfOneIdWithDifferentGroupsAtOnce_neverMakeTwoJobs() throws Exception {
        String topic = HandBuiltStore.fresh("claims");
        int ids = 40;
        String[] groups = { "ga", "gb", null };
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            for (int round = 0; round < 3; round++) {
                String prefix = "r" + round + "-";
                CountDownLatch start = new CountDownLatch(1);
                List<CompletableFuture<Set<String>>> racers = new ArrayList<>();
                for (String group : groups) {
                    racers.add(CompletableFuture.supplyAsync(() -> {
                        Set<String> won = new HashSet<>();
                        try {
                            start.await();
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                        for (int i = 0; i < ids; i++) {
                            try {
                                if (enqueue(job(topic, prefix + i, group, HOUR)).created()) {
                                    won.add(prefix + i);
                                }
                            } catch (IdTakenException refused) {
                                // the other racer's job has the id
                            }
                        }
                        return won;
                    }, pool));
                }
                start.countDown();
                Set<String> created = new HashSet<>();
                for (CompletableFuture<Set<String>> r : racers) {
                    for (String id : r.get()) {
                        assertTrue(created.add(id), "two enqueues created " + id);
                    }
                }
                assertEquals(ids, created.size());
            }
            assertEquals(3L * ids, jobs(topic), "never two jobs of one id");
        } finally {
            pool.shutdownNow();
        }
    }

    /** One job taken from {@code p} (it is due), its lease. */
    private Lease takeOne(Partition p) {
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            List<TakenJob> jobs = queue.take(p, 1, 60_000, "t" + System.nanoTime() + ":", new HashSet<>(), List.of(), 0).jobs();
            if (!jobs.isEmpty()) {
                return jobs.get(0).lease();
            }
        }
        throw new AssertionError("nothing to take in " + p);
    }

    private static long redisNow() {
        try (Resp redis = HandBuiltStore.resp()) {
            List<Object> t = redis.list("TIME");
            return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000;
        }
    }

    /** A dead job of the id in its home, then the id enqueued with a group elsewhere. */
    private String deadAtHomeThenClaimed(String topic) {
        String id = idAwayFrom(topic, "ga");
        Partition home = queue.partitionOf(topic, id);
        assertTrue(enqueue(job(topic, id, null, 0)).created());
        queue.fail(home, takeOne(home), 0, "boom", 5, true);
        assertTrue(inspection.get(topic, id).isPresent());
        assertTrue(enqueue(job(topic, id, "ga", HOUR)).created(), "a dead id is enqueued anew");
        return id;
    }

    @Test
    void aClaimReplacesTheDeadJobOfItsIdAtHome_soNoRequeueMakesASecondLiveJob() {
        String topic = HandBuiltStore.fresh("claims");
        String id = deadAtHomeThenClaimed(topic);
        Partition q = queue.partitionOf(topic, id, "ga");
        try (Resp redis = HandBuiltStore.resp()) {
            Partition home = queue.partitionOf(topic, id);
            assertEquals(0, redis.num("HEXISTS", keys.jobs(home), id), "the dead record went");
            assertEquals(null, redis.str("ZSCORE", keys.dead(home), id), "and its dead-set entry");
        }
        assertTrue(inspection.revive(topic, id).isEmpty(), "nothing dead to requeue");
        assertEquals(q, holder(topic, id));
        assertEquals(1, jobs(topic));
        assertEquals(io.delayq.core.JobState.SCHEDULED, inspection.get(topic, id).orElseThrow().state());
    }

    @Test
    void cancelByIdOfAGroupedJobWhoseIdDiedAtHome_cancelsIt() {
        String topic = HandBuiltStore.fresh("claims");
        String id = deadAtHomeThenClaimed(topic);
        assertEquals(io.delayq.core.CancelOutcome.CANCELLED, inspection.cancel(topic, id));
        assertEquals(0, jobs(topic));
    }

    @Test
    void aCompareAndSetOnAClaimReadBeforeTheIdWasEnqueuedAgainWithTheSameGroup_changesNothing() {
        String topic = HandBuiltStore.fresh("claims");
        String id = idAwayFrom(topic, "ga");
        Partition home = queue.partitionOf(topic, id);
        Partition q = queue.partitionOf(topic, id, "ga");
        assertTrue(enqueue(job(topic, id, "ga", 0)).created());
        queue.ack(q, List.of(takeOne(q))); // gone: its claim is stale
        String read;
        try (Resp redis = HandBuiltStore.resp()) {
            read = redis.str("HGET", keys.claims(home), id); // as the sweep's HSCAN reads it
        }
        assertFalse(idClaims.redis.await(idClaims.stands(IdClaims.Claim.parse(read), topic, id, redisNow())));
        // Meanwhile the id is enqueued again with the same group: claimed, enqueued, marked done.
        assertTrue(enqueue(job(topic, id, "ga", HOUR)).created());
        // The sweep's compare-and-delete of what it read: the claim is another one now.
        assertEquals(List.of(false), idClaims.redis.await(idClaims.set(home, List.of(id, read, ""))));
        assertThrows(IdTakenException.class, () -> enqueue(job(topic, id, null, HOUR)));
        assertEquals(q, holder(topic, id));
        assertEquals(1, jobs(topic));
    }

    @Test
    void aPendingClaimWhoseEnqueueNeverRan_refusesTheIdRetryably_andNotPastItsWindow() {
        String topic = HandBuiltStore.fresh("claims");
        String id = idAwayFrom(topic, "ga");
        Partition q = queue.partitionOf(topic, id, "ga");
        // The claim step of an enqueue of (id, ga) whose script never ran (its process died).
        List<IdClaims.Written> written = idClaims.redis.await(idClaims.claim(q, List.of(job(topic, id, "ga", HOUR))));
        assertEquals(0, jobs(topic));
        IdTakenException refused = assertThrows(IdTakenException.class, () -> enqueue(job(topic, id, null, HOUR)));
        assertTrue(refused.retryable(), "only an enqueue on its way refuses it: " + refused.getMessage());
        // Its window passed (the claim written as long ago): the id is free, the claim dropped.
        String old = q.index() + ":" + (redisNow() - IdClaims.PENDING_MS - 1) + ":ga";
        assertEquals(List.of(true), idClaims.redis.await(idClaims.set(queue.partitionOf(topic, id), List.of(id, written.get(0).value(), old))));
        assertTrue(enqueue(job(topic, id, null, HOUR)).created());
        assertEquals(queue.partitionOf(topic, id), holder(topic, id));
        assertEquals(0, claims(topic));
    }

    /** A dead job of the id in its home (no claim yet): enqueued with no group, taken, failed for good. */
    private String deadAtHome(String topic, String id) {
        Partition home = queue.partitionOf(topic, id);
        assertTrue(enqueue(job(topic, id, null, 0)).created());
        queue.fail(home, takeOne(home), 0, "boom", 5, true);
        assertEquals(io.delayq.core.JobState.DEAD, inspection.get(topic, id).orElseThrow().state());
        return id;
    }

    private void assertDeadAtHome(String topic, String id, String why) {
        assertDeadCopyAtHome(topic, id, why);
        assertEquals(io.delayq.core.JobState.DEAD, inspection.get(topic, id).orElseThrow().state(), why);
    }

    /** The dead job at home, listed; a GET by id answers the id's live job elsewhere, if any. */
    private void assertDeadCopyAtHome(String topic, String id, String why) {
        Partition home = queue.partitionOf(topic, id);
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(1, redis.num("HEXISTS", keys.jobs(home), id), "the dead record stays: " + why);
            assertNotEquals(null, redis.str("ZSCORE", keys.dead(home), id), "and its dead-set entry: " + why);
        }
        assertTrue(inspection.dead(topic, 100).stream().anyMatch(d -> d.id().equals(id)), "listed dead: " + why);
    }

    /** Lets a pending claim's window pass, as if it had been written that long ago (compare-and-set). */
    private void lapse(String topic, String id, String value) {
        String old = IdClaims.Claim.parse(value).partition() + ":" + (redisNow() - IdClaims.PENDING_MS - 1) + ":"
                + IdClaims.Claim.parse(value).group();
        assertEquals(List.of(true), idClaims.redis.await(idClaims.set(queue.partitionOf(topic, id), List.of(id, value, old))));
    }

    /**
     * A dead job of the id in its home, then the claim step of an enqueue of (id, ga) whose enqueue
     * and done step never ran (its process died): the id and the claim written.
     */
    private record Crashed(String id, String claim) {
    }

    private Crashed crashedAfterItsClaim(String topic) {
        String id = deadAtHome(topic, idAwayFrom(topic, "ga"));
        List<IdClaims.Written> written = idClaims.redis.await(idClaims.claim(queue.partitionOf(topic, id, "ga"),
                List.of(job(topic, id, "ga", HOUR))));
        assertEquals(1, written.size());
        return new Crashed(id, written.get(0).value());
    }

    @Test
    void aCrashBetweenTheClaimAndItsEnqueue_leavesTheDeadJobOfItsIdAtHome_andTheSweepFreesIt() {
        String topic = HandBuiltStore.fresh("claims");
        Crashed crashed = crashedAfterItsClaim(topic);
        String id = crashed.id();
        assertDeadAtHome(topic, id, "no new job exists");
        // While the claim is pending its enqueue may still come: no requeue makes the id a live job here.
        assertTrue(inspection.revive(topic, id).isEmpty(), "the claim stands");
        assertEquals(0, new DeadSweep(STORE.layer).requeue(topic, DeadSweep.Filter.ALL), "the filtered requeue leaves it");
        assertDeadAtHome(topic, id, "a pending claim");
        // Its window passed: the sweep drops the claim, the dead job is the id's again, and a requeue works.
        lapse(topic, id, crashed.claim());
        assertEquals(1, new DeadSweep(STORE.layer).sweepClaims(topic));
        assertEquals(0, claims(topic));
        assertDeadAtHome(topic, id, "after the sweep");
        assertTrue(inspection.revive(topic, id).isPresent());
        assertEquals(io.delayq.core.JobState.SCHEDULED, inspection.get(topic, id).orElseThrow().state());
        assertEquals(queue.partitionOf(topic, id), holder(topic, id));
        assertEquals(1, jobs(topic));
    }

    @Test
    void aStaleClaimLeftByACrash_isDroppedByTheRequeueOfItsDeadJob() {
        String topic = HandBuiltStore.fresh("claims");
        Crashed crashed = crashedAfterItsClaim(topic);
        String id = crashed.id();
        lapse(topic, id, crashed.claim());
        assertTrue(inspection.revive(topic, id).isPresent(), "the stale claim is dropped on the way");
        assertEquals(0, claims(topic));
        assertEquals(1, jobs(topic));
        assertThrows(IdTakenException.class, () -> enqueue(job(topic, id, "ga", HOUR)), "the id is a job at home again");
    }

    @Test
    void theEnqueueRetriedAfterTheCrash_replacesTheDeadJobOnceItsJobIsWritten() {
        String topic = HandBuiltStore.fresh("claims");
        String id = crashedAfterItsClaim(topic).id();
        Partition q = queue.partitionOf(topic, id, "ga");
        assertDeadAtHome(topic, id, "after the claim alone");
        // The client retries its enqueue: claimed again by the same partition, written, marked done.
        assertTrue(enqueue(job(topic, id, "ga", HOUR)).created(), "a dead id is enqueued anew");
        try (Resp redis = HandBuiltStore.resp()) {
            Partition home = queue.partitionOf(topic, id);
            assertEquals(0, redis.num("HEXISTS", keys.jobs(home), id), "the dead record went with the done step");
            assertEquals(null, redis.str("ZSCORE", keys.dead(home), id));
        }
        assertEquals(io.delayq.core.JobState.SCHEDULED, inspection.get(topic, id).orElseThrow().state());
        assertTrue(inspection.revive(topic, id).isEmpty(), "nothing dead to requeue");
        assertEquals(q, holder(topic, id));
        assertEquals(1, jobs(topic));
    }

    @Test
    void anEnqueueRefusedAfterItsClaim_leavesTheDeadJobOfItsIdAtHome() {
        String topic = HandBuiltStore.fresh("claims");
        String dead = deadAtHome(topic, idAwayFrom(topic, "ga"));
        String live = dead + "-live";
        while (queue.partitionOf(topic, live).equals(queue.partitionOf(topic, "x", "ga"))) {
            live = live + "l";
        }
        assertTrue(enqueue(job(topic, live, null, HOUR)).created());
        Partition q = queue.partitionOf(topic, dead, "ga");
        // One batch into ga's partition: the dead id is claimed, the live one refuses the batch.
        List<NewJob> batch = List.of(job(topic, dead, "ga", HOUR), job(topic, live, "ga", HOUR));
        assertThrows(IdTakenException.class, () -> queue.enqueue(q, batch, ""));
        assertDeadAtHome(topic, dead, "the batch was refused");
        assertEquals(2, jobs(topic));
        // Its claim, marked done with no job behind it, is stale: a requeue drops it and revives the job.
        assertTrue(inspection.revive(topic, dead).isPresent());
        assertEquals(queue.partitionOf(topic, dead), holder(topic, dead));
    }

    @Test
    void aBatchOverPartitions_replacesTheDeadJobOfAClaimedIdOnlyWhenItsClaimsAreDone() {
        String topic = HandBuiltStore.fresh("claims");
        String dead = deadAtHome(topic, idAwayFrom(topic, "ga"));
        Partition q = queue.partitionOf(topic, dead, "ga");
        JobQueue.Claims claimed = batchOverTwoPartitions(topic, dead, HOUR);
        assertDeadCopyAtHome(topic, dead, "the batch's claims are not done yet");
        queue.redis.await(queue.claimsDone(claimed));
        assertEquals(io.delayq.core.JobState.SCHEDULED, inspection.get(topic, dead).orElseThrow().state());
        assertEquals(q, holder(topic, dead));
        assertEquals(2, jobs(topic));
    }

    /**
     * A dead job of the id in its home, then a batch over two partitions that enqueues (id, ga),
     * due now, whose done step is lost (the process died after the enqueues, or another partition
     * of the batch was unavailable): the job lives in ga's partition next to the dead home copy.
     */
    private Lost doneLost(String topic) {
        String id = deadAtHome(topic, idAwayFrom(topic, "ga"));
        batchOverTwoPartitions(topic, id, 0);
        assertDeadCopyAtHome(topic, id, "the done step was lost");
        try (Resp redis = HandBuiltStore.resp()) {
            return new Lost(id, redis.str("HGET", keys.claims(queue.partitionOf(topic, id)), id), queue.partitionOf(topic, id, "ga"));
        }
    }

    private record Lost(String id, String claim, Partition q) {
    }

    /** As {@link #doneLost}, then the job taken and failed for good in ga's partition, its claim's window passed. */
    private Lost doneLostThenDied(String topic) {
        Lost lost = doneLost(topic);
        queue.fail(lost.q(), takeOne(lost.q()), 0, "boom", 5, true);
        assertEquals(2, recordsOf(topic, lost.id()), "dead in ga's partition and at home");
        lapse(topic, lost.id(), lost.claim());
        return lost;
    }

    /**
     * One batch over two partitions, claimed and enqueued, its claims not marked done: (id, ga)
     * due after {@code delayMs}, and a job of no group whose home is id's.
     */
    private JobQueue.Claims batchOverTwoPartitions(String topic, String id, long delayMs) {
        Partition home = queue.partitionOf(topic, id);
        String other = "other-0";
        for (int i = 1; !queue.partitionOf(topic, other).equals(home); i++) {
            other = "other-" + i;
        }
        java.util.Map<Partition, List<NewJob>> parts = new java.util.LinkedHashMap<>();
        parts.put(queue.partitionOf(topic, id, "ga"), List.of(job(topic, id, "ga", delayMs)));
        parts.put(home, List.of(job(topic, other, null, HOUR)));
        JobQueue.Claims claimed = queue.redis.await(queue.claimAllAsync(parts));
        for (var e : parts.entrySet()) {
            assertTrue(queue.redis.await(queue.enqueueAsync(e.getKey(), e.getValue(), "", claimed)).get(0).created());
        }
        return claimed;
    }

    private long recordsOf(String topic, String id) {
        long n = 0;
        try (Resp redis = HandBuiltStore.resp()) {
            for (Partition p : queue.partitionsOf(topic)) {
                n += redis.num("HEXISTS", keys.jobs(p), id);
            }
        }
        return n;
    }

    @Test
    void aLostDoneStep_thenTheJobDiesInItsGroupsPartition_theSweepTakesTheHomeCopy_andARequeueOfAllMakesOneLiveJob() {
        String topic = HandBuiltStore.fresh("claims");
        Lost lost = doneLostThenDied(topic);
        String id = lost.id();
        Partition q = lost.q();
        assertEquals(1, new DeadSweep(STORE.layer).sweepClaims(topic), "the stale claim dropped");
        assertEquals(0, claims(topic));
        assertEquals(1, recordsOf(topic, id), "the home copy went with it");
        assertEquals(q, holder(topic, id));
        // The operator's "requeue all dead" over every partition: one live job of the id.
        assertEquals(1, new DeadSweep(STORE.layer).requeue(topic, DeadSweep.Filter.ALL));
        assertOneLiveJob(topic, id, q);
    }

    /** The id is one job, scheduled, in {@code q}. */
    private void assertOneLiveJob(String topic, String id, Partition q) {
        assertEquals(1, recordsOf(topic, id));
        assertEquals(io.delayq.core.JobState.SCHEDULED, inspection.get(topic, id).orElseThrow().state());
        assertEquals(q, holder(topic, id));
    }

    @Test
    void aLostDoneStep_whileTheJobLives_isDoneAgainByTheSweep() {
        String topic = HandBuiltStore.fresh("claims");
        Lost lost = doneLost(topic);
        String id = lost.id();
        lapse(topic, id, lost.claim());
        assertEquals(0, new DeadSweep(STORE.layer).sweepClaims(topic), "the claim stands: its job lives");
        assertEquals(1, claims(topic));
        assertEquals(1, recordsOf(topic, id), "the home copy went");
        assertEquals(0, new DeadSweep(STORE.layer).requeue(topic, DeadSweep.Filter.ALL));
        assertTrue(inspection.revive(topic, id).isEmpty(), "nothing dead to requeue");
        assertThrows(IdTakenException.class, () -> enqueue(job(topic, id, null, HOUR)), "the claim stands");
        assertEquals(lost.q(), holder(topic, id));
    }

    @Test
    void aLostDoneStep_thenTheJobDies_aRequeueByIdRevivesTheNewerDeadJob() {
        String topic = HandBuiltStore.fresh("claims");
        Lost lost = doneLostThenDied(topic);
        String id = lost.id();
        // No sweep yet: the requeue by id meets the stale claim at home, whose job is dead in ga's partition.
        assertTrue(inspection.revive(topic, id).isPresent());
        assertOneLiveJob(topic, id, lost.q());
        assertEquals(0, new DeadSweep(STORE.layer).requeue(topic, DeadSweep.Filter.ALL));
        assertEquals(1, recordsOf(topic, id));
    }

    @Test
    void aBatchWithAPartitionUnavailable_stillMarksDoneTheClaimsOfTheJobsItWrote() {
        String topic = HandBuiltStore.fresh("claims");
        String id = deadAtHome(topic, idAwayFrom(topic, "ga"));
        JobQueue.Claims claimed = batchOverTwoPartitions(topic, id, HOUR);
        // As JobsService does when another partition of the call answered StoreUnavailableException.
        queue.redis.await(queue.claimsDone(claimed, false));
        assertOneLiveJob(topic, id, queue.partitionOf(topic, id, "ga"));
        try (Resp redis = HandBuiltStore.resp()) {
            assertTrue(redis.str("HGET", keys.claims(queue.partitionOf(topic, id)), id).contains(":-"), "marked done");
        }
    }

    @Test
    void aLostDoneStep_getAndCancelByIdFindTheLiveJob_notTheDeadHomeCopy() {
        String topic = HandBuiltStore.fresh("claims");
        String id = doneLost(topic).id();
        assertEquals(io.delayq.core.JobState.SCHEDULED, inspection.get(topic, id).orElseThrow().state());
        assertEquals(io.delayq.core.JobState.SCHEDULED, inspection.lookup(topic, id).orElseThrow().info().state());
        assertEquals(io.delayq.core.CancelOutcome.CANCELLED, inspection.cancel(topic, id));
        assertEquals(1, recordsOf(topic, id), "the dead home copy");
        assertEquals(io.delayq.core.JobState.DEAD, inspection.get(topic, id).orElseThrow().state(), "no live job: the dead one");
        assertEquals(io.delayq.core.CancelOutcome.DEAD, inspection.cancel(topic, id));
    }

    /** An id whose home is not the partition of {@code group}. */
    private String idAwayFrom(String topic, String group) {
        Partition q = queue.partitionOf(topic, "x", group);
        for (int i = 0;; i++) {
            if (!queue.partitionOf(topic, "away-" + i).equals(q)) {
                return "away-" + i;
            }
        }
    }

    private Partition holder(String topic, String id) {
        try (Resp redis = HandBuiltStore.resp()) {
            for (Partition p : queue.partitionsOf(topic)) {
                if (redis.call("HGET", keys.jobs(p), id) != null) {
                    return p;
                }
            }
        }
        return null;
    }
}
