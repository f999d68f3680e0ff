package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.delayq.store.JobListing.Filter;
import io.delayq.store.JobListing.Listed;
import io.delayq.store.JobListing.Page;

/**
 * list.lua and {@link JobListing} on a topic of four partitions: following the cursor returns every
 * job that stayed in its state once, in the state's order (scheduled by runAt over more day shards
 * than one call reads and more jobs than one call examines, many sharing a runAt; held jobs first;
 * in flight by id; dead newest first), with filters that make pages short while the cursor goes on;
 * jobs added or removed between pages do not disturb the others.
 */
class JobListingTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured("delayq.partitions", "4", "delayq.prefix", "dq4p",
            "delayq.topics.lst-grp.group-max-in-flight", "1");
    private final JobListing listing = new JobListing(STORE.layer);
    private final JobQueue queue = STORE.queue;
    private static final long DAY = 86_400_000L;

    private void enqueue(String topic, Map<String, Long> runAts, String group) {
        enqueue(queue, topic, runAts, group);
    }

    /** Jobs id → runAt of one group (null: none), each into its partition, 500 per script call. */
    static void enqueue(JobQueue queue, String topic, Map<String, Long> runAts, String group) {
        Map<Partition, List<NewJob>> by = new HashMap<>();
        runAts.forEach((id, at) -> by.computeIfAbsent(queue.partitionOf(topic, id, group), p -> new ArrayList<>())
                .add(new NewJob(topic, id, false, at, 0, "{\"n\":\"" + id + "\"}", IfExists.KEEP, null, group)));
        by.forEach((p, jobs) -> {
            for (int i = 0; i < jobs.size(); i += 500) {
                queue.enqueue(p, jobs.subList(i, Math.min(jobs.size(), i + 500)), "");
            }
        });
    }

    private List<Listed> all(String topic, JobState state, Filter f, int limit, boolean full, List<Integer> sizes) {
        return all(listing, topic, state, f, limit, full, sizes);
    }

    /** Every page of a listing, followed to the end (fails on a loop). */
    static List<Listed> all(JobListing listing, String topic, JobState state, Filter f, int limit, boolean full,
            List<Integer> sizes) {
        List<Listed> out = new ArrayList<>();
        String cursor = null;
        for (int pages = 0; pages < 10_000; pages++) {
            Page page = listing.list(topic, state, f, limit, full, cursor);
            assertTrue(page.jobs().size() <= limit);
            out.addAll(page.jobs());
            if (sizes != null) {
                sizes.add(page.jobs().size());
            }
            if (page.cursor() == null) {
                return out;
            }
            cursor = page.cursor();
        }
        throw new AssertionError("the cursor never ended");
    }

    private static List<String> ids(List<Listed> jobs) {
        return jobs.stream().map(j -> j.info().id()).toList();
    }

    @Test
    void scheduledJobsComeOnceInRunAtOrderOverDaysPartitionsAndTies() {
        String t = HandBuiltStore.fresh("lst-sched");
        long base = System.currentTimeMillis() + DAY;
        Map<String, Long> jobs = new LinkedHashMap<>();
        // 3,000 jobs over 12 days (more shards than one call reads), 20 per runAt (ties in a shard).
        for (int i = 0; i < 3000; i++) {
            jobs.put("j" + i, base + (i / 20) * (12 * DAY / 150));
        }
        enqueue(t, jobs, null);

        List<Integer> sizes = new ArrayList<>();
        List<Listed> got = all(t, JobState.SCHEDULED, Filter.ALL, 250, false, sizes);

        assertEquals(jobs.size(), got.size(), "every job, once");
        assertEquals(jobs.keySet(), new HashSet<>(ids(got)));
        for (int i = 1; i < got.size(); i++) {
            assertTrue(!got.get(i).info().runAt().isBefore(got.get(i - 1).info().runAt()), "runAt order at " + i);
        }
        for (Listed l : got) {
            assertEquals(jobs.get(l.info().id()), l.info().runAt().toEpochMilli());
            assertEquals(JobState.SCHEDULED, l.info().state());
            assertNull(l.payload(), "payloads only when asked for");
        }
        assertTrue(sizes.stream().anyMatch(s -> s == 250));
    }

    @Test
    void aFilterThatMatchesFewGivesShortPagesWhileTheCursorGoesOn() {
        String t = HandBuiltStore.fresh("lst-filter");
        long base = System.currentTimeMillis() + 60_000;
        Map<String, Long> jobs = new LinkedHashMap<>();
        for (int i = 0; i < 6000; i++) {
            jobs.put((i % 500 == 0 ? "tenant7-" : "other-") + i, base + i * 1000L);
        }
        enqueue(t, jobs, null);

        List<Integer> sizes = new ArrayList<>();
        List<Listed> got = all(t, JobState.SCHEDULED, new Filter("tenant7-", null, null, null), 100, true, sizes);

        assertEquals(List.of("tenant7-0", "tenant7-500", "tenant7-1000", "tenant7-1500", "tenant7-2000", "tenant7-2500",
                "tenant7-3000", "tenant7-3500", "tenant7-4000", "tenant7-4500", "tenant7-5000", "tenant7-5500"), ids(got));
        assertTrue(sizes.size() > 1, "4 x 1,000 examined per call: more than one call for 6,000 jobs");
        assertEquals("{\"n\":\"tenant7-500\"}", got.get(1).payload());

        // from/to bound runAt, inclusive.
        List<Listed> window = all(t, JobState.SCHEDULED, new Filter(null, null, base + 10_000, base + 19_000), 3,
                false, null);
        assertEquals(10, window.size());
        assertEquals(base + 10_000, window.get(0).info().runAt().toEpochMilli());
        assertEquals(base + 19_000, window.get(9).info().runAt().toEpochMilli());
    }

    @Test
    void jobsAddedOrRemovedBetweenPagesLeaveTheOthersListedOnce() {
        String t = HandBuiltStore.fresh("lst-moving");
        long base = System.currentTimeMillis() + 60_000;
        Map<String, Long> jobs = new LinkedHashMap<>();
        for (int i = 0; i < 400; i++) {
            jobs.put("s" + i, base + (i / 4) * 10L);
        }
        enqueue(t, jobs, null);
        Set<String> seen = new HashSet<>();
        List<String> order = new ArrayList<>();
        String cursor = null;
        int round = 0;
        Set<String> cancelled = new TreeSet<>();
        do {
            Page page = listing.list(t, JobState.SCHEDULED, Filter.ALL, 30, false, cursor);
            for (Listed l : page.jobs()) {
                assertTrue(seen.add(l.info().id()), "listed twice: " + l.info().id());
                order.add(l.info().id());
            }
            // Between pages: cancel a job not yet listed, add one before and one after the position.
            round++;
            String victim = "s" + (399 - round);
            if (!seen.contains(victim) && STORE.inspection.cancel(t, victim) == io.delayq.core.CancelOutcome.CANCELLED) {
                cancelled.add(victim);
            }
            enqueue(t, Map.of("early" + round, base - 1, "late" + round, base + 5000), null);
            cursor = page.cursor();
        } while (cursor != null);

        for (String id : jobs.keySet()) {
            assertTrue(seen.contains(id) != cancelled.contains(id), id);
        }
        assertFalse(cancelled.isEmpty());
        assertTrue(order.stream().noneMatch(id -> id.startsWith("early")), "behind the position when added");
    }

    @Test
    void heldJobsComeFirstMarkedHeldAndTheGroupFilterFindsAGroupsJobs() {
        String t = "lst-grp";
        long now = System.currentTimeMillis();
        Map<String, Long> a = new LinkedHashMap<>();
        for (int i = 0; i < 5; i++) {
            a.put("ga" + i, now - 10_000 + i);
        }
        enqueue(t, a, "ga");
        enqueue(t, Map.of("gb0", now - 5_000, "gb1", now + 3_600_000), "gb");
        enqueue(t, Map.of("plain", now + 60_000), null);
        // A take admits ga0 and gb0 and holds ga1..ga4 back.
        for (Partition p : queue.partitionsOf(t)) {
            queue.take(p, 10, 30_000, "lst:", new HashSet<>(), List.of(), 0);
        }

        List<Listed> got = all(t, JobState.SCHEDULED, Filter.ALL, 100, false, null);
        assertEquals(List.of("ga1", "ga2", "ga3", "ga4", "plain", "gb1"), ids(got));
        assertEquals(Boolean.TRUE, got.get(0).info().held());
        assertNull(got.get(4).info().held());

        assertEquals(List.of("ga1", "ga2", "ga3", "ga4"), ids(all(t, JobState.SCHEDULED, new Filter(null, "ga", null, null),
                2, false, null)));
        assertEquals(List.of("gb1"), ids(all(t, JobState.SCHEDULED, new Filter(null, "gb", null, null), 2, false, null)));
        List<Listed> running = all(t, JobState.INFLIGHT, Filter.ALL, 1, false, null);
        assertEquals(List.of("ga0", "gb0"), ids(running));
        assertEquals(JobState.INFLIGHT, running.get(0).info().state());
    }

    @Test
    void inFlightJobsComeByIdAndDeadOnesNewestFirst() {
        String t = HandBuiltStore.fresh("lst-states");
        long now = System.currentTimeMillis();
        Map<String, Long> due = new LinkedHashMap<>();
        for (int i = 0; i < 40; i++) {
            due.put("k" + (char) ('a' + i % 26) + i, now - 1000);
        }
        enqueue(t, due, null);
        List<TakenJob> taken = new ArrayList<>();
        for (Partition p : queue.partitionsOf(t)) {
            taken.addAll(queue.take(p, 100, 60_000, "lst:", new HashSet<>(), List.of(), 0).jobs());
        }
        assertEquals(40, taken.size());
        List<String> byId = new ArrayList<>(due.keySet());
        byId.sort(null);
        assertEquals(byId, ids(all(t, JobState.INFLIGHT, Filter.ALL, 7, false, null)));

        // Ten of them die, one after the other.
        List<String> died = new ArrayList<>();
        for (TakenJob j : taken.subList(0, 10)) {
            queue.fail(queue.partitionOf(t, j.lease().id()), j.lease(), 0, "boom " + j.lease().id(), 1);
            died.add(0, j.lease().id());
        }
        List<Listed> dead = all(t, JobState.DEAD, Filter.ALL, 3, false, null);
        assertEquals(10, dead.size());
        for (int i = 1; i < dead.size(); i++) {
            assertFalse(dead.get(i).info().deadAt().isAfter(dead.get(i - 1).info().deadAt()), "newest first");
        }
        assertEquals(new HashSet<>(died), new HashSet<>(ids(dead)));
        assertNotNull(dead.get(0).info().lastError());
        assertEquals(30, all(t, JobState.INFLIGHT, Filter.ALL, 1000, false, null).size());
        String prefix = died.get(0).substring(0, 2);
        assertTrue(ids(all(t, JobState.DEAD, new Filter(prefix, null, null, null), 1, false, null)).stream()
                .allMatch(id -> id.startsWith(prefix)));
    }

    @Test
    void inFlightJobsWhoseCancelWasAskedAreFlaggedCancellingAsTheirGetSays() {
        String t = HandBuiltStore.fresh("lst-cancelling");
        long now = System.currentTimeMillis();
        Map<String, Long> due = new LinkedHashMap<>();
        for (int i = 0; i < 12; i++) {
            due.put("c" + i, now - 1000);
        }
        enqueue(t, due, null);
        int taken = 0;
        for (Partition p : queue.partitionsOf(t)) {
            taken += queue.take(p, 100, 60_000, "lstc:", new HashSet<>(), List.of(), 0).jobs().size();
        }
        assertEquals(12, taken);
        Set<String> cancelled = Set.of("c3", "c7", "c10");
        for (String id : cancelled) {
            assertEquals(io.delayq.core.CancelOutcome.CANCELLING, STORE.inspection.cancel(t, id));
        }
        List<Listed> running = all(t, JobState.INFLIGHT, Filter.ALL, 5, false, null);
        assertEquals(12, running.size());
        for (Listed l : running) {
            String id = l.info().id();
            assertEquals(JobState.INFLIGHT, l.info().state(), id);
            assertEquals(cancelled.contains(id) ? Boolean.TRUE : null, l.info().cancelling(), id);
            assertEquals(STORE.inspection.lookup(t, id).orElseThrow().info().cancelling(), l.info().cancelling(), id);
        }
        // With the payloads too.
        assertTrue(all(t, JobState.INFLIGHT, Filter.ALL, 100, true, null).stream()
                .filter(l -> Boolean.TRUE.equals(l.info().cancelling())).map(l -> l.info().id()).toList()
                .containsAll(cancelled));
    }

    @Test
    void aCursorOfAnotherStateOrNotACursorIsRefusedAndSucceededIsEmpty() {
        String t = HandBuiltStore.fresh("lst-cursor");
        long base = System.currentTimeMillis() + 60_000;
        Map<String, Long> jobs = new LinkedHashMap<>();
        for (int i = 0; i < 10; i++) {
            jobs.put("c" + i, base + i);
        }
        enqueue(t, jobs, null);
        Page first = listing.list(t, JobState.SCHEDULED, Filter.ALL, 3, false, null);
        assertNotNull(first.cursor());
        assertThrows(JobListing.BadCursor.class, () -> listing.list(t, JobState.DEAD, Filter.ALL, 3, false, first.cursor()));
        assertThrows(JobListing.BadCursor.class, () -> listing.list(t, JobState.SCHEDULED, Filter.ALL, 3, false, "nope!"));
        assertThrows(JobListing.BadCursor.class, () -> listing.list(t, JobState.SCHEDULED, Filter.ALL, 3, false, "MXxzfDI"));
        Page succeeded = listing.list(t, JobState.SUCCEEDED, Filter.ALL, 3, false, null);
        assertTrue(succeeded.jobs().isEmpty());
        assertNull(succeeded.cursor());
    }
}
