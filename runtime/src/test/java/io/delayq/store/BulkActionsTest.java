package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.store.JobListing.Filter;

/**
 * bulk.lua walked by {@link BulkActions} on a topic of four partitions, over more jobs than one step
 * examines: exactly the scheduled jobs that match are cancelled or moved, each once; jobs in flight
 * or dead are left; a group's held jobs are found, and a released (admitted) job cancelled gives its
 * slot to the group's next held job, as the single cancel does.
 */
class BulkActionsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured("delayq.partitions", "4", "delayq.prefix", "dq4p",
            "delayq.topics.bulk-grp.group-max-in-flight", "1");
    private final BulkActions bulk = new BulkActions(STORE.layer);
    private final JobListing listing = new JobListing(STORE.layer);
    private final JobQueue queue = STORE.queue;
    private final Inspection inspection = STORE.inspection;

    private void enqueue(String topic, Map<String, Long> runAts, String group) {
        JobListingTest.enqueue(queue, topic, runAts, group);
    }

    private Set<String> scheduled(String topic) {
        Set<String> ids = new HashSet<>();
        JobListingTest.all(listing, topic, JobState.SCHEDULED, Filter.ALL, 1000, false, null)
                .forEach(j -> ids.add(j.info().id()));
        return ids;
    }

    @Test
    void cancelTakesExactlyTheMatchingScheduledJobsOfEveryPartition() {
        String t = HandBuiltStore.fresh("bulk-cancel");
        long base = System.currentTimeMillis() + 3_600_000;
        Map<String, Long> jobs = new LinkedHashMap<>();
        for (int i = 0; i < 2000; i++) {
            jobs.put((i % 2 == 0 ? "tenant7-" : "tenant8-") + i, base + (i % 50) * 86_400_000L / 10);
        }
        enqueue(t, jobs, null);
        // Two of tenant 7 are due, taken (in flight), one of them dies: a bulk cancel leaves both.
        enqueue(t, Map.of("tenant7-running", System.currentTimeMillis() - 1000, "tenant7-dying",
                System.currentTimeMillis() - 1000), null);
        for (Partition p : queue.partitionsOf(t)) {
            for (TakenJob j : queue.take(p, 10, 60_000, "b:", new HashSet<>(), List.of(), 0).jobs()) {
                if (j.lease().id().equals("tenant7-dying")) {
                    queue.fail(p, j.lease(), 0, "boom", 1);
                }
            }
        }

        assertEquals(1000, bulk.cancel(t, new Filter("tenant7-", null, null, null)));

        Set<String> left = scheduled(t);
        assertEquals(1000, left.size());
        assertTrue(left.stream().allMatch(id -> id.startsWith("tenant8-")));
        assertEquals(JobState.INFLIGHT, inspection.get(t, "tenant7-running").orElseThrow().state());
        assertEquals(JobState.DEAD, inspection.get(t, "tenant7-dying").orElseThrow().state());
        assertTrue(inspection.get(t, "tenant7-0").isEmpty(), "the record goes with the shard entry");
        assertEquals(0, bulk.cancel(t, new Filter("tenant7-", null, null, null)), "nothing left to cancel");
    }

    @Test
    void rescheduleMovesEachMatchOnceWithinTheRunAtRange() {
        String t = HandBuiltStore.fresh("bulk-move");
        long base = System.currentTimeMillis() + 3_600_000;
        Map<String, Long> jobs = new LinkedHashMap<>();
        for (int i = 0; i < 900; i++) {
            jobs.put("m" + i, base + i * 1000L);
        }
        enqueue(t, jobs, null);
        long target = base + 3 * 86_400_000L;

        long moved = bulk.reschedule(t, new Filter(null, null, base + 100_000, base + 399_000), false, target);

        assertEquals(300, moved);
        for (int i = 0; i < 900; i++) {
            long runAt = inspection.get(t, "m" + i).orElseThrow().runAt().toEpochMilli();
            assertEquals(i >= 100 && i < 400 ? target : base + i * 1000L, runAt, "m" + i);
        }
        // Moved jobs are in their new shard: a listing by runAt finds them there, once.
        List<String> late = listing.list(t, JobState.SCHEDULED, new Filter(null, null, target, target), 1000, false, null)
                .jobs().stream().map(j -> j.info().id()).toList();
        assertEquals(300, late.size());
        assertEquals(300, new HashSet<>(late).size());
        // Again: every match is already there.
        assertEquals(0, bulk.reschedule(t, new Filter(null, null, target, target), false, target));
        // By delay, from Redis now.
        long before = System.currentTimeMillis();
        assertEquals(1, bulk.reschedule(t, new Filter("m899", null, null, null), true, 7_200_000));
        long runAt = inspection.get(t, "m899").orElseThrow().runAt().toEpochMilli();
        assertTrue(runAt >= before + 7_200_000 - 5_000 && runAt <= System.currentTimeMillis() + 7_200_000 + 5_000);
    }

    @Test
    void aGroupsHeldAndReleasedJobsAreActedOnAsTheSingleActionsDo() {
        String t = "bulk-grp";
        long now = System.currentTimeMillis();
        Map<String, Long> a = new LinkedHashMap<>();
        for (int i = 0; i < 4; i++) {
            a.put("ha" + i, now - 10_000 + i);
        }
        enqueue(t, a, "ha");
        enqueue(t, Map.of("hb0", now - 9_000, "hb1", now - 8_000, "hb2", now + 3_600_000), "hb");
        Partition pa = queue.partitionOf(t, "x", "ha"), pb = queue.partitionOf(t, "x", "hb");
        for (Partition p : Set.of(pa, pb)) {
            queue.take(p, 10, 60_000, "g:", new HashSet<>(), List.of(), 0);
        }
        // ha0 and hb0 run; ha1..ha3 and hb1 are held.
        assertEquals(Boolean.TRUE, inspection.get(t, "ha1").orElseThrow().held());

        assertEquals(3, bulk.cancel(t, new Filter(null, "ha", null, null)));
        assertTrue(inspection.get(t, "ha1").isEmpty() && inspection.get(t, "ha3").isEmpty());
        assertEquals(JobState.INFLIGHT, inspection.get(t, "ha0").orElseThrow().state());

        // Moving hb's jobs an hour later: the held one leaves gheld for its new shard, once.
        long later = now + 7_200_000;
        assertEquals(2, bulk.reschedule(t, new Filter(null, "hb", null, null), false, later));
        Optional<JobInfo> hb1 = inspection.get(t, "hb1");
        assertEquals(later, hb1.orElseThrow().runAt().toEpochMilli());
        assertEquals(null, hb1.get().held());
        assertEquals(later, inspection.get(t, "hb2").orElseThrow().runAt().toEpochMilli());
    }

    /**
     * A group's released (admitted, due) job met by the walk before its held one: the slot it frees
     * goes to the group only once the walk's jobs have all been acted on, so the held job is never
     * released into today's shard and then moved or cancelled as if still held (a job in two places,
     * run at once and again later).
     */
    @Test
    void aReleasedJobMetBeforeItsGroupsHeldOneLeavesNoJobInTwoPlaces() {
        String t = "bulk-grp";
        long now = System.currentTimeMillis();
        long later = now + 2 * 86_400_000L;
        for (String g : List.of("hc", "hd")) {
            Map<String, Long> jobs = new LinkedHashMap<>();
            for (int i = 0; i < 3; i++) {
                jobs.put(g + i, now - 10_000 + i);
            }
            enqueue(t, jobs, g);
            Partition p = queue.partitionOf(t, "x", g);
            List<TakenJob> first = queue.take(p, 10, 60_000, g + ":", new HashSet<>(), List.of(), 0).jobs();
            TakenJob running = first.stream().filter(j -> j.lease().id().equals(g + "0")).findFirst().orElseThrow();
            // g0's ack releases g1 (due now, admitted, in today's shard); g2 stays held.
            queue.ack(p, List.of(running.lease()));
            assertEquals(null, inspection.get(t, g + "1").orElseThrow().held());
            assertEquals(Boolean.TRUE, inspection.get(t, g + "2").orElseThrow().held());
        }

        assertEquals(2, bulk.reschedule(t, new Filter(null, "hc", null, null), false, later));
        assertEquals(2, bulk.cancel(t, new Filter(null, "hd", null, null)));

        assertEquals(later, inspection.get(t, "hc1").orElseThrow().runAt().toEpochMilli());
        assertEquals(later, inspection.get(t, "hc2").orElseThrow().runAt().toEpochMilli());
        assertTrue(inspection.get(t, "hd1").isEmpty() && inspection.get(t, "hd2").isEmpty());
        for (String g : List.of("hc", "hd")) {
            Partition p = queue.partitionOf(t, "x", g);
            assertEquals(List.of(), queue.take(p, 10, 60_000, g + "-again:", new HashSet<>(), List.of(), 0).jobs(),
                    "nothing of group " + g + " is due: no copy left in today's shard");
        }
        List<String> moved = listing.list(t, JobState.SCHEDULED, new Filter(null, "hc", later, later), 1000, false, null)
                .jobs().stream().map(j -> j.info().id()).toList();
        assertEquals(List.of("hc1", "hc2"), moved.stream().sorted().toList());
    }
}
