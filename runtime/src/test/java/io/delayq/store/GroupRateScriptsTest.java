package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * The group rate limit inside the take script, driven directly on topics no replica serves: a GCRA
 * per group in Redis time; a due job its group's limit does not let start is put off to the
 * group's next turn (a scheduled job with that runAt), never in another group's way, and started
 * at that turn. "grate-config" has {@code group-rate-limit=0.5} and "grate-cap" also
 * {@code group-max-in-flight=3} in this class's {@code STORE}; the other topics get their limit
 * over the operator's path ({@link TopicAdmin#setGroupRateLimit}).
 */
class GroupRateScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics.grate-config.group-rate-limit", "0.5",
            "delayq.topics.grate-cap.group-rate-limit", "4",
            "delayq.topics.grate-cap.group-max-in-flight", "3");
    JobQueue store = STORE.queue;
    Inspection inspection = STORE.inspection;
    TopicAdmin topicAdmin = STORE.topicAdmin;
    Keys keys = STORE.keys;

    private final Set<Integer> older = new HashSet<>();
    private int token;

    private static NewJob job(String topic, String group, String id, long runAt) {
        return new NewJob(topic, id, false, runAt, 0, "\"" + id + "\"", IfExists.KEEP, null, group);
    }

    /** Jobs {@code <group>-1..n} of each group, due now, the groups' jobs interleaved in runAt order. */
    private void enqueueDue(Partition p, int n, String... groups) {
        List<NewJob> batch = new ArrayList<>();
        long first = System.currentTimeMillis() - 10_000;
        for (int i = 1; i <= n; i++) {
            for (int g = 0; g < groups.length; g++) {
                batch.add(job(p.topic(), groups[g], groups[g] + "-" + i, first + i * groups.length + g));
            }
        }
        store.enqueue(p, batch, "");
    }

    private TakeResult take(Partition p, int want, List<Lease> acks) {
        return store.take(p, want, 30_000, "gr" + (token++) + ":", older, acks, 0);
    }

    private static List<String> ids(TakeResult r) {
        return r.jobs().stream().map(j -> j.lease().id()).toList();
    }

    private static long count(List<String> ids, String group) {
        return ids.stream().filter(id -> id.startsWith(group + "-")).count();
    }

    /**
     * Takes until {@code n} jobs were taken, each take acking the previous one's jobs, polled every
     * 20 ms (a taker woken early finds the put-off ones not yet due); then one more take acks the
     * last and finds nothing. Returns each job's id with the Redis time of its take.
     */
    private Map<String, Long> takeAll(Partition p, int n, List<Lease> acks) {
        Map<String, Long> startedAt = new HashMap<>();
        List<Lease> pending = new ArrayList<>(acks);
        org.awaitility.Awaitility.await().pollInSameThread().pollDelay(java.time.Duration.ZERO)
                .pollInterval(java.time.Duration.ofMillis(20)).atMost(java.time.Duration.ofSeconds(60))
                .alias("all " + n + " taken").until(() -> {
                    TakeResult r = take(p, 100, List.copyOf(pending));
                    pending.clear();
                    for (TakenJob j : r.jobs()) {
                        assertNull(startedAt.put(j.lease().id(), r.now()), j.lease().id() + " taken twice");
                        pending.add(j.lease());
                    }
                    return startedAt.size() >= n;
                });
        assertTrue(take(p, 100, pending).jobs().isEmpty(), "every job taken once, none left due");
        return startedAt;
    }

    @Test
    void aGroupAtItsLimitIsPutOffToItsTurnsWhileAnotherGroupIsTakenInFull() {
        String topic = HandBuiltStore.fresh("grate-off");
        Partition p = store.partitionsOf(topic).get(0);
        assertEquals(2.0, topicAdmin.setGroupRateLimit(topic, 2).groupRateLimit());
        enqueueDue(p, 10, "slow", "other");
        TakeResult first = take(p, 100, List.of());
        // 100 wanted, 20 due: each group's limiter lets one go now (2/s), the rest wait their turns.
        assertEquals(1, count(ids(first), "slow"), "one job of a group at 2/s");
        assertEquals(1, count(ids(first), "other"), "the other group has a limiter of its own: its first job goes");
        long now = first.now();
        // The rest are scheduled at their turns, 500 ms apart, in the group's order.
        long previous = now;
        for (int i = 2; i <= 10; i++) {
            JobInfo j = inspection.get(topic, "slow-" + i).orElseThrow();
            assertEquals(JobState.SCHEDULED, j.state());
            long at = j.runAt().toEpochMilli();
            assertTrue(at > previous, "slow-" + i + " after slow-" + (i - 1) + ": " + at + " vs " + previous);
            assertTrue(at >= now + (i - 1) * 500L - 20 && at <= now + (i - 1) * 500L + 20,
                    "slow-" + i + " put off to its turn, " + (i - 1) * 500 + " ms after the first: " + (at - now));
            previous = at;
        }
        assertTrue(first.nextDue() > now && first.nextDue() <= now + 500,
                "the taker sleeps until the first turn, no earlier: " + (first.nextDue() - now));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(Long.toString(first.nextDue()), redis.str("GET", keys.next(p)),
                    "\"next\" (what the safety-net poll reads) names that turn: nothing stalls when a wake-up is lost");
        }
    }

    @Test
    void aGroupAtItsLimitNeverDelaysAGroupBelowIt() {
        String topic = HandBuiltStore.fresh("grate-free");
        Partition p = store.partitionsOf(topic).get(0);
        topicAdmin.setGroupRateLimit(topic, 1);
        enqueueDue(p, 50, "busy");
        // 50 due jobs of "busy" ahead of the others: one starts, 49 are put off.
        TakeResult busy = take(p, 10, List.of());
        assertEquals(List.of("busy-1"), ids(busy));
        List<NewJob> others = new ArrayList<>();
        long due = System.currentTimeMillis() - 1;
        for (int g = 0; g < 20; g++) {
            others.add(job(topic, "g" + g, "g" + g + "-1", due));
        }
        store.enqueue(p, others, "");
        TakeResult next = take(p, 100, List.of());
        assertEquals(20, next.jobs().size(), "every other group's due job at once: " + ids(next));
        assertEquals(0, count(ids(next), "busy"), "and none of the busy group's before its turn");
    }

    @Test
    void theLimitedGroupsRateHoldsOverSecondsAndEveryJobRunsOnce() throws Exception {
        String topic = HandBuiltStore.fresh("grate-pace");
        Partition p = store.partitionsOf(topic).get(0);
        topicAdmin.setGroupRateLimit(topic, 5);
        enqueueDue(p, 15, "a", "b");
        Map<String, Long> startedAt = takeAll(p, 30, List.of());
        for (String g : List.of("a", "b")) {
            List<Long> times = new ArrayList<>();
            for (int i = 1; i <= 15; i++) {
                times.add(startedAt.get(g + "-" + i));
            }
            for (int i = 1; i < times.size(); i++) {
                assertTrue(times.get(i) >= times.get(i - 1), g + "'s jobs start in their order: " + times);
            }
            // 5/s: job i never starts before i intervals of 200 ms after the first (less the 10 ms
            // slack and a rounding ms), however late a take comes; and all 15 not far later than
            // 2.8 s (generous: a loaded machine's takes come late).
            for (int i = 1; i < times.size(); i++) {
                long after = times.get(i) - times.get(0);
                assertTrue(after >= i * 200L - 20, g + "-" + (i + 1) + " started " + after + " ms after the first");
            }
            long span = times.get(14) - times.get(0);
            assertTrue(span <= 14 * 200 + 10_000, g + ": 15 jobs at 5/s take 2.8 s, took " + span + " ms");
        }
        try (Resp redis = HandBuiltStore.resp()) {
            for (Object m : redis.list("ZRANGE", keys.groupRateTat(p), "0", "-1")) {
                assertFalse(m.toString().startsWith("\0"), "a turn is dropped once its job starts: " + m);
            }
        }
    }

    @Test
    void theLimitersStateIsBoundedAndExpiresOnceTheGroupIsIdle() {
        String topic = HandBuiltStore.fresh("grate-state");
        Partition p = store.partitionsOf(topic).get(0);
        topicAdmin.setGroupRateLimit(topic, 2);
        enqueueDue(p, 3, "s");
        TakeResult r = take(p, 10, List.of());
        assertEquals(List.of("s-1"), ids(r));
        try (Resp redis = HandBuiltStore.resp()) {
            // The group's pace and one turn per job put off: nothing else.
            assertEquals(3L, redis.num("ZCARD", keys.groupRateTat(p)));
            long ttl = redis.num("PTTL", keys.groupRateTat(p));
            // The latest entry is the pace, 1.5 s ahead; the key goes two days after it.
            long grace = 2 * 86_400_000L;
            assertTrue(ttl > grace && ttl <= grace + 1_500 + 100, "expires two days after its latest entry: " + ttl);
        }
    }

    @Test
    void aChangedOrClearedLimitDropsTheGroupsPaceAndTheConfigurationsApplies() {
        String topic = "grate-config";
        Partition p = store.partitionsOf(topic).get(0);
        assertNull(topicAdmin.flows(List.of(topic)).get(topic).groupRateLimit(), "none set over the API");
        assertEquals(0.5, topicAdmin.configuredGroupRateLimit(topic).getAsDouble());
        String group = HandBuiltStore.fresh("cfg");
        List<NewJob> batch = new ArrayList<>();
        long due = System.currentTimeMillis() - 1_000;
        for (int i = 1; i <= 3; i++) {
            batch.add(job(topic, group, group + "-" + i, due + i));
        }
        store.enqueue(p, batch, "");
        TakeResult r = take(p, 10, List.of());
        assertEquals(List.of(group + "-1"), ids(r), "0.5/s from the configuration: one job, the next in 2 s");
        assertTrue(inspection.get(topic, group + "-2").orElseThrow().runAt().toEpochMilli() >= r.now() + 1_900);
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(1L, redis.num("EXISTS", keys.groupRateTat(p)));
            assertEquals(100.0, topicAdmin.setGroupRateLimit(topic, 100).groupRateLimit());
            assertEquals(0L, redis.num("EXISTS", keys.groupRateTat(p)), "a new limit starts from a clean pace");
            assertNull(topicAdmin.clearGroupRateLimit(topic).groupRateLimit(), "cleared: the configuration's applies");
        }
    }

    @Test
    void withGroupMaxInFlightAPutOffJobKeepsItsAdmissionAndBothLimitsHold() throws Exception {
        String topic = "grate-cap";
        Partition p = store.partitionsOf(topic).get(0);
        String group = HandBuiltStore.fresh("cap");
        List<NewJob> batch = new ArrayList<>();
        long due = System.currentTimeMillis() - 1_000;
        for (int i = 1; i <= 8; i++) {
            batch.add(job(topic, group, group + "-" + i, due + i));
        }
        store.enqueue(p, batch, "");
        TakeResult first = take(p, 10, List.of());
        // At 4/s one starts; with a cap of 3, two more are admitted and put off to their turns; the
        // other five are held by the cap.
        assertEquals(List.of(group + "-1"), ids(first));
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals("3", redis.str("HGET", keys.groups(p), group), "three admitted: one running, two put off");
            assertEquals(5L, redis.num("ZCARD", keys.groupsHeld(p)));
        }
        Map<String, Long> rest = takeAll(p, 7, first.jobs().stream().map(TakenJob::lease).toList());
        assertFalse(rest.containsKey(group + "-1"), "the first job was not taken again");
        try (Resp redis = HandBuiltStore.resp()) {
            assertNull(redis.str("HGET", keys.groups(p), group), "every admission ended");
            assertEquals(0L, redis.num("HLEN", keys.jobs(p)), "every job ran, none left behind");
        }
    }
}
