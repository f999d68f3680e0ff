package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * Concurrency groups with three replicas as real processes of the packaged server, one of them
 * SIGKILLed part-way: {@code group-max-in-flight=1} holds over all replicas, each group's jobs start
 * in runAt order, a group with 5,000 due jobs does not delay the small groups' jobs, and every job
 * runs. The same replicas serve a second topic with a {@code group-rate-limit} through the kill:
 * no group runs faster than its limit, and every job runs.
 */
class GroupsIT extends OwnRedisTest {
    private static final int SMALL_GROUPS = 20, SMALL_JOBS = 30, BIG_JOBS = 5_000;
    /** The rated topic: each group's backlog takes about 30 s at its limit, so the kill falls inside it. */
    private static final int RATED_GROUPS = 4, RATED_JOBS = 30;
    private static final double RATED_PER_SECOND = 1;

    private static Map<String, String> serving(String topic, Receiver receiver, String via) {
        Map<String, String> s = new HashMap<>();
        s.put("delayq.topics." + topic + ".http.url", receiver.url(via));
        s.put("delayq.topics." + topic + ".group-max-in-flight", "1");
        // A killed replica's leases expire soon, so that its groups move on within the test.
        s.put("delayq.dispatch.lease", "2s");
        s.put("delayq.dispatch.heartbeat", "500ms");
        s.put("delayq.dispatch.reclaim-interval", "500ms");
        return s;
    }

    /** {@link #serving} plus a second topic whose groups are limited to {@value #RATED_PER_SECOND} jobs/s each. */
    private static Map<String, String> serving(String topic, Receiver receiver, String rated, Receiver ratedReceiver,
            String via) {
        Map<String, String> s = serving(topic, receiver, via);
        s.put("delayq.topics." + rated + ".http.url", ratedReceiver.url(via));
        s.put("delayq.topics." + rated + ".group-rate-limit", Double.toString(RATED_PER_SECOND));
        return s;
    }

    /**
     * No group of the rated topic ran faster than its limit, by more than a generous margin (the
     * receiver sees the calls, after the takes, on a loaded machine): over the whole run, its
     * first starts span at least 80 % of (n - 1) intervals; in any 10 s, at most 1.5 times the
     * limit's worth plus 2. Returns the fastest group's rate over its run, jobs/s.
     */
    private static double assertNoGroupRanFasterThanItsLimit(Receiver rated) {
        Map<String, List<Long>> starts = new HashMap<>();
        rated.deliveries.forEach((id, d) -> starts.computeIfAbsent(group(id), k -> new ArrayList<>()).add(d.get(0).receivedMs()));
        assertEquals(RATED_GROUPS, starts.size(), starts.keySet().toString());
        double fastest = 0;
        for (Map.Entry<String, List<Long>> e : starts.entrySet()) {
            List<Long> t = e.getValue();
            t.sort(null);
            long span = t.get(t.size() - 1) - t.get(0);
            double floor = 0.8 * (t.size() - 1) * 1000 / RATED_PER_SECOND;
            assertTrue(span >= floor, e.getKey() + ": " + t.size() + " jobs started within " + span + " ms, limit "
                    + RATED_PER_SECOND + "/s");
            fastest = Math.max(fastest, (t.size() - 1) * 1000.0 / Math.max(1, span));
            int most = (int) (1.5 * 10 * RATED_PER_SECOND) + 2;
            for (int i = 0, j = 0; i < t.size(); i++) {
                while (t.get(i) - t.get(j) >= 10_000) {
                    j++;
                }
                assertTrue(i - j + 1 <= most, e.getKey() + ": " + (i - j + 1) + " starts within 10 s, limit "
                        + RATED_PER_SECOND + "/s");
            }
        }
        return fastest;
    }

    /** Job ids are {@code <group>-<n>}, n in runAt order within the group. */
    private static String group(String id) {
        return id.substring(0, id.lastIndexOf('-'));
    }

    private static int index(String id) {
        return Integer.parseInt(id.substring(id.lastIndexOf('-') + 1));
    }

    /**
     * Each group's jobs started in runAt order (first starts; a job the lost replica was running
     * runs again later, as a lost attempt's retry). A job it had taken but not yet called the
     * target with when lost (at {@code lostAt}) has no start before that: it starts for the first
     * time after its lease, due again after the lost attempt's backoff, so behind the jobs of its
     * group that were due; with group-max-in-flight 1 that is at most one per group.
     */
    private static void assertEachGroupStartedInRunAtOrder(Receiver receiver, long lostAt) {
        Map<String, List<Receiver.Delivery>> firsts = new HashMap<>();
        receiver.deliveries.forEach((id, d) -> firsts.computeIfAbsent(group(id), k -> new ArrayList<>()).add(d.get(0)));
        firsts.forEach((g, d) -> {
            d.sort(Comparator.comparingLong(Receiver.Delivery::receivedMs).thenComparing(x -> index(x.id())));
            Receiver.Delivery latest = d.get(0);
            List<String> takenByTheLost = new ArrayList<>();
            for (int i = 1; i < d.size(); i++) {
                Receiver.Delivery next = d.get(i);
                if (index(next.id()) > index(latest.id())) {
                    latest = next;
                } else {
                    assertTrue(next.receivedMs() > lostAt, g + ": " + next.id() + " started after " + latest.id()
                            + ", before the fault");
                    takenByTheLost.add(next.id());
                }
            }
            assertTrue(takenByTheLost.size() <= 1, g + ": out of runAt order " + takenByTheLost);
        });
    }

    /**
     * Every job ran at most twice, and twice only when its first start was on the lost replica
     * ({@code via}) before the fault at {@code lostAt}: the one rerun the contract allows. Returns
     * how many ran twice.
     */
    private static int assertRunTwiceOnlyWhenTheLostReplicaWasRunningIt(Receiver receiver, String via, long lostAt) {
        int again = 0;
        for (Map.Entry<String, List<Receiver.Delivery>> e : receiver.deliveries.entrySet()) {
            if (e.getValue().size() > 1) {
                again++;
                Receiver.Delivery first = e.getValue().get(0);
                assertTrue(e.getValue().size() == 2 && via.equals(first.via()) && first.receivedMs() <= lostAt,
                        e.getKey() + " ran " + e.getValue().size() + " times: " + e.getValue());
            }
        }
        return again;
    }

    private static String jobs(String topic, String group, int from, int to, long runAtMs) {
        StringBuilder b = new StringBuilder("[");
        for (int i = from; i < to; i++) {
            b.append(i == from ? "" : ",").append("{\"topic\":\"").append(topic).append("\",\"id\":\"").append(group)
                    .append('-').append(i).append("\",\"group\":\"").append(group).append("\",\"runAt\":\"")
                    .append(Instant.ofEpochMilli(runAtMs + i)).append("\"}");
        }
        return b.append(']').toString();
    }

    private static void post(AppProcess app, String json) {
        HttpResponse<String> r = app.post("/jobs/batch", json);
        assertEquals(200, r.statusCode(), r.body());
    }

    @Test
    void oneJobPerGroupAtOnceInRunAtOrderAndABigGroupDoesNotDelayTheSmallOnesThroughAKill() throws Exception {
        String topic = Topics.fresh("groups");
        String rated = Topics.fresh("group-rate");
        try (Receiver receiver = new Receiver();
                Receiver ratedReceiver = new Receiver();
                AppProcess a = AppProcess.start("grp-a", redis.port(), serving(topic, receiver, rated, ratedReceiver, "a"));
                AppProcess b = AppProcess.start("grp-b", redis.port(), serving(topic, receiver, rated, ratedReceiver, "b"));
                AppProcess c = AppProcess.start("grp-c", redis.port(), serving(topic, receiver, rated, ratedReceiver, "c"))) {
            receiver.countBy(d -> group(d.id()));
            // The small groups' calls take 20 ms (long enough for two of a group to overlap, were
            // the limit not kept); the big group's 2 ms, its 5,000 run one after the other.
            receiver.holdBy(d -> d.id().startsWith("big-") ? 2 : 20);
            long now = System.currentTimeMillis();
            for (int k = 0; k < BIG_JOBS; k += 1_000) {
                post(a, jobs(topic, "big", k, k + 1_000, now - 60_000));
            }
            StringBuilder small = new StringBuilder();
            for (int g = 0; g < SMALL_GROUPS; g++) {
                String json = jobs(topic, "s" + g, 0, SMALL_JOBS, now - 30_000);
                small.append(small.isEmpty() ? "[" : ",").append(json, 1, json.length() - 1);
            }
            post(b, small.append(']').toString());
            ratedReceiver.holdFor(20);
            StringBuilder ratedJobs = new StringBuilder();
            for (int g = 0; g < RATED_GROUPS; g++) {
                String json = jobs(rated, "r" + g, 0, RATED_JOBS, now - 30_000);
                ratedJobs.append(ratedJobs.isEmpty() ? "[" : ",").append(json, 1, json.length() - 1);
            }
            post(c, ratedJobs.append(']').toString());
            int ratedTotal = RATED_GROUPS * RATED_JOBS;

            int total = BIG_JOBS + SMALL_GROUPS * SMALL_JOBS + 10;
            // After 1,000 calls, or half the rated backlog if the big group is slower: the kill must
            // fall inside the rated topic's run too.
            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> (receiver.distinct() >= 1_000
                    || ratedReceiver.distinct() >= ratedTotal / 2) && ratedReceiver.distinct() >= 2 * RATED_GROUPS);
            c.kill();
            long killedAt = System.currentTimeMillis();
            int ratedAtKill = ratedReceiver.distinct();
            int callsAtKill = receiver.distinct();
            // Due later, while the big group's backlog still drains: one job of a group of its own each.
            long late = System.currentTimeMillis() + 5_000;
            StringBuilder lateJobs = new StringBuilder();
            for (int g = 0; g < 10; g++) {
                String json = jobs(topic, "late" + g, 0, 1, late);
                lateJobs.append(lateJobs.isEmpty() ? "[" : ",").append(json, 1, json.length() - 1);
            }
            post(a, lateJobs.append(']').toString());
            Awaitility.await().atMost(Duration.ofSeconds(240)).until(() -> receiver.completed.size() == total
                    && ratedReceiver.completed.size() == ratedTotal);

            // The rated topic: every job ran (twice only one the killed replica was running), no
            // group faster than its limit; the kill fell inside its run.
            assertTrue(ratedAtKill < ratedTotal - RATED_GROUPS, "the rated backlog had run when c was killed: "
                    + ratedAtKill + " of " + ratedTotal);
            int ratedAgain = assertRunTwiceOnlyWhenTheLostReplicaWasRunningIt(ratedReceiver, "c", killedAt);
            assertEquals(ratedTotal, ratedReceiver.deliveries.size());
            double fastest = assertNoGroupRanFasterThanItsLimit(ratedReceiver);
            System.out.printf("group rate limit %.1f/s, %d groups x %d jobs through the kill (%d started before it):"
                    + " fastest group %.3f jobs/s over its run, %d run again%n", RATED_PER_SECOND, RATED_GROUPS, RATED_JOBS,
                    ratedAtKill, fastest, ratedAgain);

            // Never two of a group at once, over all replicas (the kill included: its calls ended
            // before their leases expired).
            receiver.peakBy.forEach((g, peak) -> assertEquals(1, peak.get(), g + ": " + peak.get() + " at once"));
            assertEquals(SMALL_GROUPS + 11, receiver.peakBy.size());

            // Each group's jobs started in runAt order; every job ran, twice only a job the killed
            // replica was running.
            assertEachGroupStartedInRunAtOrder(receiver, killedAt);
            int again = assertRunTwiceOnlyWhenTheLostReplicaWasRunningIt(receiver, "c", killedAt);
            assertEquals(total, receiver.deliveries.size());

            // The late jobs started within 1 s of their runAt although the big group still ran.
            long bigLast = receiver.deliveries.entrySet().stream().filter(e -> e.getKey().startsWith("big-"))
                    .mapToLong(e -> e.getValue().get(0).receivedMs()).max().orElseThrow();
            List<Long> lateness = new ArrayList<>();
            for (int g = 0; g < 10; g++) {
                lateness.add(receiver.deliveries.get("late" + g + "-0").get(0).receivedMs() - late);
            }
            lateness.sort(null);
            long smallLast = receiver.deliveries.entrySet().stream().filter(e -> e.getKey().startsWith("s"))
                    .mapToLong(e -> e.getValue().get(0).receivedMs()).max().orElseThrow();
            System.out.printf("groups, 3 replicas (one SIGKILLed after %d calls): %d jobs, most of one group at once %d;"
                    + " 20 small groups x 30 done %d ms after the enqueue, the big group's last start %d ms after;"
                    + " 10 late jobs' lateness p50 %d ms, max %d ms; %d jobs run again after the kill%n",
                    callsAtKill, total, receiver.peakBy.values().stream().mapToLong(x -> x.get()).max().orElseThrow(), smallLast - now,
                    bigLast - now, lateness.get(5), lateness.get(9), again);
            assertTrue(bigLast > late + 1_000, "the big group's backlog drained before the late jobs were due: the test"
                    + " measured nothing");
            assertTrue(lateness.get(9) <= 1_000, "a late job started " + lateness.get(9) + " ms after its runAt");
        }
    }

    /**
     * A replica frozen (SIGSTOP) for three leases while it runs some groups' jobs, then thawed:
     * the other replicas run those groups on after its leases expire, and never two of a group at
     * once (a late ack of the frozen one must release nothing: its slots went to the next jobs);
     * every job runs, twice only one the frozen replica had (the one duplicate the contract allows
     * a holder frozen beyond its lease). An attempt it had started but not yet sent when frozen
     * leaves once it is thawed and may meet its group's next job at the target: its calls of the
     * first 2 s after the thaw are left out of the one-at-a-time count, not out of the others.
     */
    @Test
    void aReplicaFrozenBeyondItsLeaseLeavesEveryGroupOneAtATime() throws Exception {
        String topic = Topics.fresh("groups-frozen");
        int groups = 10, perGroup = 150;
        long[] thawed = { Long.MAX_VALUE };
        try (Receiver receiver = new Receiver();
                AppProcess a = AppProcess.start("grpf-a", redis.port(), serving(topic, receiver, "a"));
                AppProcess b = AppProcess.start("grpf-b", redis.port(), serving(topic, receiver, "b"));
                AppProcess c = AppProcess.start("grpf-c", redis.port(), serving(topic, receiver, "c"))) {
            receiver.countBy(d -> "c".equals(d.via()) && d.receivedMs() >= thawed[0] && d.receivedMs() < thawed[0] + 2_000
                    ? null : group(d.id()));
            receiver.holdBy(d -> 20); // long enough for two of a group to overlap, were the limit not kept
            long now = System.currentTimeMillis();
            for (int g = 0; g < groups; g++) {
                post(a, jobs(topic, "g" + g, 0, perGroup, now - 10_000));
            }
            int total = groups * perGroup;
            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> receiver.distinct() >= total / 5
                    && receiver.deliveries.values().stream().anyMatch(d -> "c".equals(d.get(0).via())));
            c.freeze();
            long frozenAt = System.currentTimeMillis();
            try {
                // The fault's length (three 2 s leases), not a synchronisation: the others must go on meanwhile.
                Thread.sleep(6_000);
                assertTrue(receiver.distinct() > total / 5 + 2 * groups, "the others went on while c was frozen: "
                        + receiver.distinct() + " of " + total + " started");
            } finally {
                thawed[0] = System.currentTimeMillis();
                c.thaw();
            }
            Awaitility.await().atMost(Duration.ofSeconds(120)).until(() -> receiver.completed.size() == total);

            receiver.peakBy.forEach((g, peak) -> assertEquals(1, peak.get(), g + ": " + peak.get() + " at once"));
            assertEquals(groups, receiver.peakBy.size());
            int again = 0;
            for (Map.Entry<String, List<Receiver.Delivery>> e : receiver.deliveries.entrySet()) {
                List<Receiver.Delivery> d = e.getValue();
                if (d.size() > 1) {
                    again++;
                    assertTrue(d.size() == 2 && d.stream().anyMatch(x -> "c".equals(x.via()) && (x.receivedMs() <= frozenAt
                            || x.receivedMs() < thawed[0] + 2_000)), e.getKey() + " ran " + d.size() + " times: " + d);
                }
            }
            assertEquals(total, receiver.deliveries.size());
            System.out.printf("groups, 3 replicas (one SIGSTOPped 6 s): %d jobs in %d groups, most of one group at once %d;"
                    + " %d run again%n", total, groups, receiver.peakBy.values().stream().mapToLong(x -> x.get()).max()
                            .orElseThrow(), again);
        }
    }
}
