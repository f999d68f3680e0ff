package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.CancelOutcome;
import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * Concurrency groups inside the scripts, driven directly: a take holds back a group's due jobs
 * while the group has its group-max-in-flight admitted, and every step that ends an admission gives
 * the slot to the group's first held job. One configured topic per test ({@code grp-N} has
 * {@code group-max-in-flight=1}, {@code grp-two} 2, in this class's {@code STORE}; no observer takes
 * them), each test's own groups. Every path that moves a job of a group (cancel, reschedule, replace,
 * fail, requeue from the dead set, reclaim, drain) has a test that fails without its handling.
 */
class GroupScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics.grp-1.group-max-in-flight", "1",
            "delayq.topics.grp-2.group-max-in-flight", "1",
            "delayq.topics.grp-3.group-max-in-flight", "1",
            "delayq.topics.grp-4.group-max-in-flight", "1",
            "delayq.topics.grp-5.group-max-in-flight", "1",
            "delayq.topics.grp-6.group-max-in-flight", "1",
            "delayq.topics.grp-7.group-max-in-flight", "1",
            "delayq.topics.grp-8.group-max-in-flight", "1",
            "delayq.topics.grp-9.group-max-in-flight", "1",
            "delayq.topics.grp-10.group-max-in-flight", "1",
            "delayq.topics.grp-11.group-max-in-flight", "1",
            "delayq.topics.grp-12.group-max-in-flight", "1",
            "delayq.topics.grp-13.group-max-in-flight", "1",
            "delayq.topics.grp-two.group-max-in-flight", "2");
    JobQueue store = STORE.queue;
    Inspection inspection = STORE.inspection;
    Keys keys = STORE.keys;

    private final Set<Integer> older = new HashSet<>();
    private int token;

    private static NewJob job(String topic, String group, String id, long runAt) {
        return new NewJob(topic, id, false, runAt, 0, "\"" + id + "\"", IfExists.KEEP, null, group);
    }

    /** Jobs {@code prefix1..n} of one group, due in that order, the first {@code agoMs} ago, 1 ms apart. */
    private void enqueueDue(Partition p, String group, String prefix, int n, long agoMs) {
        List<NewJob> batch = new ArrayList<>(n);
        long first = System.currentTimeMillis() - agoMs;
        for (int i = 1; i <= n; i++) {
            batch.add(job(p.topic(), group, prefix + i, first + i));
        }
        store.enqueue(p, batch, "");
    }

    private List<TakenJob> take(Partition p, int want, Lease... acks) {
        return store.take(p, want, 30_000, "t" + (token++) + ":", older, List.of(acks), 0).jobs();
    }

    private static List<String> ids(List<TakenJob> jobs) {
        return jobs.stream().map(j -> j.lease().id()).toList();
    }

    private static Lease lease(List<TakenJob> jobs, String id) {
        return jobs.stream().filter(j -> j.lease().id().equals(id)).findFirst().orElseThrow().lease();
    }

    private Partition partition(String topic) {
        return store.partitionsOf(topic).get(0);
    }

    private boolean held(String topic, String id) {
        Optional<JobInfo> j = inspection.get(topic, id);
        return j.isPresent() && j.get().state() == JobState.SCHEDULED && Boolean.TRUE.equals(j.get().held());
    }

    /**
     * Takes the partition's first due job, {@code id}, on a 1 ms lease, waits until Redis' clock has
     * passed it and reclaims it (its lost attempt retries in an hour); returns the lost lease.
     */
    private Lease takenAndReclaimed(Partition p, String id) {
        List<TakenJob> first = store.take(p, 10, 1, "lost:", older, List.of(), 0).jobs();
        assertEquals(List.of(id), ids(first));
        try (Resp redis = HandBuiltStore.resp()) {
            long deadline = (long) Double.parseDouble(redis.str("ZSCORE", keys.inflight(p), id));
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
                List<Object> t = redis.list("TIME");
                return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000 > deadline;
            });
        }
        assertEquals(1, store.reclaim(p, 100, 10, 5, List.of(), 0, 3_600_000, 1.0, 3_600_000, 0)[0]);
        return lease(first, id);
    }

    private long heldCount(Partition p) {
        try (Resp redis = HandBuiltStore.resp()) {
            return redis.num("ZCARD", keys.groupsHeld(p));
        }
    }

    @Test
    void aGroupAtItsLimitIsHeldBackAndItsJobsStartInRunAtOrder() {
        Partition p = partition("grp-1");
        enqueueDue(p, "alpha", "a", 3, 5_000);
        store.enqueue(p, List.of(job(p.topic(), "beta", "b1", System.currentTimeMillis() - 4_000)), "");
        List<TakenJob> first = take(p, 10);
        assertEquals(List.of("a1", "b1"), ids(first), "one of each group; a2 and a3 wait for a1");
        assertTrue(held(p.topic(), "a2") && held(p.topic(), "a3"), "held back, shown as such");
        assertEquals("alpha", inspection.get(p.topic(), "a2").orElseThrow().group());
        assertEquals(2, inspection.gauges(p.topic())[6], "the gauges count them");
        assertEquals(2, inspection.gauges(p.topic())[0], "and as scheduled (a2, a3)");
        assertEquals(List.of(), ids(take(p, 10)), "nothing more while alpha and beta run");

        assertEquals(List.of("a2"), ids(take(p, 10, lease(first, "a1"))), "a1's ack, carried: a2 next");
        List<TakenJob> next = take(p, 10);
        assertEquals(List.of(), ids(next));
        try (Resp redis = HandBuiltStore.resp()) {
            String a2Token = redis.str("HGET", keys.leases(p), "a2");
            assertTrue(store.ack(p, List.of(new Lease("a2", a2Token))).isEmpty());
        }
        List<TakenJob> last = take(p, 10);
        assertEquals(List.of("a3"), ids(last), "a2's ack (the ack script): a3 next");
        store.ack(p, List.of(lease(last, "a3"), lease(first, "b1")));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(List.of("", "1"), redis.list("HGETALL", keys.groups(p)),
                    "no count left behind, only the limit the take stored");
            assertEquals(0L, redis.num("HLEN", keys.groupsAdmitted(p)));
            assertEquals(0L, redis.num("ZCARD", keys.groupsHeld(p)));
        }
    }

    @Test
    void aBusyGroupNeverHoldsBackAnotherGroupsJobForMoreThanAFewTakes() {
        Partition p = partition("grp-2");
        enqueueDue(p, "big", "big", 3_000, 60_000);
        store.enqueue(p, List.of(job(p.topic(), "small", "s1", System.currentTimeMillis() - 1_000)), "");
        int calls = 0;
        List<String> got = new ArrayList<>();
        while (!got.contains("s1") && calls < 10) {
            got.addAll(ids(take(p, 5)));
            calls++;
        }
        assertTrue(got.contains("s1"), "the small group's job, due after 3,000 of the big one's, was taken");
        assertTrue(calls <= 4, "within a few takes (each looks at 1,000 jobs at most): " + calls);
        assertEquals(List.of("big1", "s1"), got, "the big group ran its first job only");
        assertEquals(2_999, heldCount(p));
    }

    @Test
    void groupsAtTheirLimitAreServedInTurn() {
        Partition p = partition("grp-3");
        enqueueDue(p, "a", "a", 5, 10_000);
        enqueueDue(p, "b", "b", 5, 5_000);
        List<String> order = new ArrayList<>();
        List<TakenJob> running = take(p, 2);
        while (!running.isEmpty()) {
            order.add(String.join("+", ids(running)));
            running = take(p, 2, running.stream().map(TakenJob::lease).toArray(Lease[]::new));
        }
        // Each take has one job of each group: a released job queues behind the jobs already due.
        assertEquals(List.of("a1+b1", "a2+b2", "a3+b3", "a4+b4", "a5+b5"),
                order.stream().map(s -> String.join("+", java.util.Arrays.stream(s.split("\\+")).sorted().toList()))
                        .toList());
    }

    @Test
    void aGroupLimitOfTwoRunsTwoAtOnce() {
        Partition p = partition("grp-two");
        enqueueDue(p, "g", "t", 5, 5_000);
        List<TakenJob> first = take(p, 10);
        assertEquals(List.of("t1", "t2"), ids(first));
        assertEquals(List.of("t3"), ids(take(p, 10, lease(first, "t1"))));
    }

    @Test
    void cancellingAHeldJobOrAReleasedOneKeepsTheGroupMoving() {
        Partition p = partition("grp-4");
        enqueueDue(p, "g", "c", 4, 5_000);
        List<TakenJob> first = take(p, 10);
        assertEquals(List.of("c1"), ids(first));
        assertEquals(CancelOutcome.CANCELLED, inspection.cancel(p.topic(), "c3"), "a held job");
        assertTrue(inspection.get(p.topic(), "c3").isEmpty());
        assertEquals(2, heldCount(p), "c3 left the held set with its record: c2 and c4 are left");
        store.ack(p, List.of(lease(first, "c1")));
        assertEquals(1, heldCount(p), "c1's ack released c2 (due now, admitted): c4 is left");
        assertEquals(CancelOutcome.CANCELLED, inspection.cancel(p.topic(), "c2"), "a released job");
        // Without cancel's handling, c2's admission would stay counted and c4 would wait for good.
        assertEquals(0, heldCount(p), "the cancelled one gave its slot to c4");
        assertEquals(List.of("c4"), ids(take(p, 10)));
    }

    @Test
    void reschedulingAHeldJobMovesItOutOfTheHeldSet() {
        Partition p = partition("grp-5");
        enqueueDue(p, "g", "r", 3, 5_000);
        List<TakenJob> first = take(p, 10);
        assertEquals(List.of("r1"), ids(first));
        long later = System.currentTimeMillis() + 3_600_000;
        assertEquals(io.delayq.core.RescheduleResult.Outcome.RESCHEDULED,
                inspection.reschedule(p.topic(), "r2", false, later).outcome());
        JobInfo r2 = inspection.get(p.topic(), "r2").orElseThrow();
        assertNull(r2.held(), "scheduled for later, no longer held");
        assertEquals(later, r2.runAt().toEpochMilli());
        assertEquals(1, heldCount(p), "r3 only");
        // Without reschedule's handling, r2's stale member would be released first and run now.
        assertEquals(List.of("r3"), ids(take(p, 10, lease(first, "r1"))));
        assertEquals(0, heldCount(p));
    }

    @Test
    void replacingAHeldJobTakesItsNewPayloadAndKeepsItsPlaceWithoutACopy() {
        Partition p = partition("grp-6");
        enqueueDue(p, "g", "x", 2, 5_000);
        List<TakenJob> first = take(p, 10);
        assertEquals(List.of("x1"), ids(first));
        assertTrue(held(p.topic(), "x2"));
        NewJob replace = new NewJob(p.topic(), "x2", true, 0, 0, "\"new\"", IfExists.REPLACE, null, "g");
        assertTrue(store.enqueue(p, List.of(replace), "").get(0).replaced());
        assertTrue(held(p.topic(), "x2"), "still due in its group: it keeps its place among the held");
        assertEquals(1, heldCount(p), "once");
        assertEquals(List.of(), ids(take(p, 10)), "x1 still runs");
        assertEquals(1, heldCount(p), "once");
        List<TakenJob> next = take(p, 10, lease(first, "x1"));
        assertEquals(List.of("x2"), ids(next));
        assertEquals("\"new\"", next.get(0).record().payload());
    }

    @Test
    void aFailureReleasesTheNextJobAndARequeuedDeadJobRejoinsItsGroup() {
        Partition p = partition("grp-7");
        enqueueDue(p, "g", "f", 2, 5_000);
        List<TakenJob> first = take(p, 10);
        assertEquals(List.of("f1"), ids(first));
        assertEquals(FailOutcome.Kind.DEAD, store.fail(p, lease(first, "f1"), 0, "boom", 5, true).kind());
        List<TakenJob> second = take(p, 10);
        assertEquals(List.of("f2"), ids(second), "the dead job's slot went to f2");
        assertTrue(inspection.revive(p.topic(), "f1").isPresent(), "requeued from the dead set");
        assertEquals("g", inspection.get(p.topic(), "f1").orElseThrow().group(), "with its group");
        assertEquals(List.of(), ids(take(p, 10)), "its group is busy: held, not run beside f2");
        assertTrue(held(p.topic(), "f1"));
        assertEquals(List.of("f1"), ids(take(p, 10, lease(second, "f2"))));
    }

    @Test
    void aRetriedFailureReleasesTheNextJobAndRetriesBehindIt() {
        Partition p = partition("grp-8");
        enqueueDue(p, "g", "e", 2, 5_000);
        List<TakenJob> first = take(p, 10);
        assertEquals(FailOutcome.Kind.RETRY, store.fail(p, lease(first, "e1"), 0, "boom", 5).kind());
        List<TakenJob> second = take(p, 10);
        assertEquals(List.of("e2"), ids(second), "e2 got the slot; e1's retry waits behind it (held)");
        assertTrue(held(p.topic(), "e1"));
        assertEquals(List.of("e1"), ids(take(p, 10, lease(second, "e2"))));
    }

    @Test
    void aReclaimedLeaseGivesItsSlotToTheNextJob() throws Exception {
        Partition p = partition("grp-9");
        enqueueDue(p, "g", "k", 2, 5_000);
        takenAndReclaimed(p, "k1");
        try (Resp redis = HandBuiltStore.resp()) {
            // Without reclaim's handling the group would keep k1's admission: nothing would run.
            assertEquals(List.of("k2"), ids(take(p, 10)), "k1's lost attempt retries in an hour; k2 runs now");
            assertEquals(1L, redis.num("ZCARD", keys.inflight(p)));
        }
    }

    /**
     * The holder of a reclaimed lease (a replica frozen or cut off beyond its lease) comes back and
     * reports on it: every report is refused as stale, and none of them frees a slot of the group,
     * which the next job already has — a second release would run two of the group at once.
     */
    @Test
    void aReclaimedHoldersLateReportsReleaseNothing() throws Exception {
        Partition p = partition("grp-13");
        enqueueDue(p, "g", "z", 4, 5_000);
        Lease stale = takenAndReclaimed(p, "z1");
        List<TakenJob> second = take(p, 10);
        assertEquals(List.of("z2"), ids(second), "z1's slot went to z2");

        assertEquals(List.of("z1"), store.extend(p, 30_000, List.of(stale)), "heartbeat refused");
        assertEquals(List.of("z1"), store.ack(p, List.of(stale)), "ack refused");
        assertEquals(FailOutcome.Kind.STALE, store.fail(p, stale, 0, "late", 5).kind(), "failure refused");
        assertTrue(store.snooze(p, stale, false, 1_000).isEmpty(), "snooze refused");
        assertEquals(0, store.requeue(p, List.of(stale)), "drain refused");
        assertEquals(List.of(), ids(take(p, 10, stale)), "an ack carried by a take refused: z2 still runs alone");
        assertEquals(2, heldCount(p), "z3 and z4 still held");

        List<TakenJob> third = take(p, 10, lease(second, "z2"));
        assertEquals(List.of("z3"), ids(third), "z2's ack releases z3, one at a time still");
        assertEquals(List.of(), ids(take(p, 10)));
        assertEquals(1, heldCount(p), "z4");
    }

    @Test
    void aDrainedJobKeepsItsPlaceAheadOfItsGroupsHeldJobs() {
        Partition p = partition("grp-10");
        enqueueDue(p, "g", "d", 3, 5_000);
        List<TakenJob> first = take(p, 10);
        assertEquals(List.of("d1"), ids(first));
        assertEquals(1, store.requeue(p, List.of(lease(first, "d1"))), "drained back");
        // Were the drain to free d1's slot, d2 would be released and run first (or, were it to
        // drop d1's admission without that, d1 would be held behind d2 with nothing left to run).
        assertEquals(List.of("d1"), ids(take(p, 10)), "d1 again, d2 and d3 still held");
        assertEquals(2, heldCount(p));
    }

    @Test
    void theDashboardReadListsHeldJobsWithTheirGroup() {
        Partition p = partition("grp-11");
        enqueueDue(p, "g", "h", 3, 5_000);
        take(p, 10);
        TopicSnapshot s = inspection.peek(p.topic(), 60_000, 5, 10, 10);
        assertEquals(2, s.heldCount());
        assertEquals(List.of("h2", "h3"), s.held().stream().map(TopicSnapshot.Held::id).toList());
        assertEquals("g", s.held().get(0).group());
        assertTrue(s.next().stream().noneMatch(j -> j.id().startsWith("h")), "in no shard: not among the next due");
    }
}
