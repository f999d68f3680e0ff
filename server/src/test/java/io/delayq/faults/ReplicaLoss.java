package io.delayq.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * One of three replicas lost for three leases while it holds jobs — cut off from the network
 * ({@link PartitionedReplicaIT}) or frozen ({@link FrozenReplicaIT}) — and then back. What must
 * hold (the one duplicate the contract allows, and no more): its jobs run again on the others
 * within lease + 2 s of the loss; back, it starts none of them again, and its late acks are
 * refused (the records stay as the new attempts left them, still leased to them); it takes new
 * work within 2 s.
 *
 * <p>The shared topic has 4 slots per replica and 12 jobs, so that each replica runs 4: the
 * others' first jobs end when the loss begins (their slots then take the lost replica's jobs),
 * the lost replica's jobs end just after it is back (it learns of their success only then, and
 * acks late), and the reruns run until the test has looked at Redis. A topic that only the lost
 * replica serves gets jobs during the loss: the new work it must take.
 */
final class ReplicaLoss {
    static final int SLOTS = 4;
    static final int JOBS = 3 * SLOTS;
    static final long LOSS_MS = 3 * Faults.LEASE_MS;
    static final long RERUN_BOUND_MS = Faults.LEASE_MS + 2000;
    static final long NEW_WORK_BOUND_MS = 2000;

    /** The fault: how it begins and ends. */
    record Fault(String what, Runnable begin, Runnable end) {
    }

    final String shared = Topics.fresh("lost-shared");
    final String own = Topics.fresh("lost-own");
    private final CompletableFuture<Void> lost = new CompletableFuture<>();
    private final CompletableFuture<Void> back = new CompletableFuture<>();
    private final CompletableFuture<Void> released = new CompletableFuture<>();

    /** The settings of replica {@code i} (1–3; 3 is the one lost) with its target on {@code receiver}. */
    Map<String, String> settings(int i, Receiver receiver) {
        Map<String, String> s = Faults.merge(Faults.leaseSettings(), Faults.topic(shared, receiver.url("r" + i), SLOTS));
        if (i == 3) {
            s.putAll(Faults.topic(own, receiver.url("r3"), SLOTS));
        }
        return s;
    }

    /** Runs the scenario; {@code redisPort} is Redis on loopback, as the test sees it. */
    void run(int redisPort, Receiver receiver, List<AppProcess> replicas, Fault fault) throws Exception {
        AppProcess healthy = replicas.get(0);
        receiver.gateBy(d -> {
            if (!shared.equals(d.topic())) {
                return null;
            }
            boolean first = receiver.deliveries.get(d.id()).get(0) == d;
            return !first ? released : "r3".equals(d.via()) ? back : lost;
        });
        assertEquals(200, healthy.post("/jobs/batch", Faults.batch(shared, "s", JOBS, 0)).statusCode());
        Awaitility.await("all " + JOBS + " jobs running, " + SLOTS + " on each replica").atMost(Duration.ofSeconds(20))
                .until(() -> receiver.tally(shared).distinct() == JOBS);
        List<String> held = receiver.of(shared).entrySet().stream().filter(e -> "r3".equals(e.getValue().get(0).via()))
                .map(Map.Entry::getKey).toList();
        assertEquals(SLOTS, held.size(), "jobs the replica to lose holds: " + receiver.of(shared));

        long lostAt = System.currentTimeMillis();
        fault.begin().run();
        boolean ended = false;
        Map<String, String> tokens = new LinkedHashMap<>();
        Map<String, String> records = new LinkedHashMap<>();
        long healedAt;
        try {
            lost.complete(null);
            assertEquals(201, healthy.post("/jobs", "{\"topic\":\"" + own + "\",\"id\":\"n1\"}").statusCode());
            // Reruns happen (or not) within the loss; it lasts its length whatever they do.
            Awaitility.await().atMost(Duration.ofMillis(LOSS_MS - 1000)).pollInterval(Duration.ofMillis(100))
                    .ignoreExceptions().until(() -> held.stream().allMatch(id -> receiver.starts(shared, id) >= 2));
            long left = lostAt + LOSS_MS - System.currentTimeMillis();
            if (left > 0) {
                Thread.sleep(left); // the loss's length is what is under test: a fixed time
            }
            try (Resp r = new Resp(redisPort)) {
                String k = Topics.keys(shared);
                for (String id : held) {
                    tokens.put(id, r.str("HGET", k + "leases", id));
                    records.put(id, r.str("HGET", k + "jobs", id));
                }
            }
        } catch (ConditionTimeoutException e) {
            // reported below, from the receiver's figures
        } finally {
            // Taken before the fault ends: the replica may take its new work before end() returns.
            healedAt = System.currentTimeMillis();
            fault.end().run();
            ended = true;
            back.complete(null);
        }
        assertTrue(ended);

        // Reruns: each lost job again on another replica, within lease + 2 s of the loss.
        Map<String, Long> rerunAfter = new LinkedHashMap<>();
        List<String> rerunBy = new ArrayList<>();
        for (String id : held) {
            List<Receiver.Delivery> ds = receiver.of(shared).get(id);
            if (ds.size() >= 2) {
                rerunAfter.put(id, ds.get(1).receivedMs() - lostAt);
                rerunBy.add(ds.get(1).via());
            }
        }
        long worstRerun = rerunAfter.values().stream().mapToLong(Long::longValue).max().orElse(-1);

        // Back: its late acks refused, the records as the reruns left them, still leased to them.
        String lateAcks;
        try {
            Awaitility.await("the lost replica's calls answered").atMost(Duration.ofSeconds(10))
                    .until(() -> held.stream().allMatch(id -> receiver.completed.getOrDefault(id, List.of()).stream()
                            .anyMatch(d -> "r3".equals(d.via()))));
            Awaitility.await("records of the lost replica's jobs unchanged by its late acks")
                    .during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(6)).until(() -> {
                        try (Resp r = new Resp(redisPort)) {
                            String k = Topics.keys(shared);
                            for (String id : held) {
                                if (!java.util.Objects.equals(tokens.get(id), r.str("HGET", k + "leases", id))
                                        || !java.util.Objects.equals(records.get(id), r.str("HGET", k + "jobs", id))
                                        || r.call("ZSCORE", k + "inflight", id) == null) {
                                    return false;
                                }
                            }
                            return true;
                        }
                    });
            lateAcks = "refused";
        } catch (ConditionTimeoutException e) {
            lateAcks = "NOT refused (" + e.getMessage() + ")";
        }

        // New work: the topic only it serves, enqueued during the loss.
        long newWorkAfter = -1;
        try {
            Awaitility.await("new work taken by the replica that was lost").atMost(Duration.ofSeconds(10))
                    .until(() -> receiver.starts(own, "n1") > 0);
            newWorkAfter = receiver.of(own).get("n1").get(0).receivedMs() - healedAt;
        } catch (ConditionTimeoutException e) {
            // reported below
        }

        released.complete(null);
        Awaitility.await("both topics empty in Redis").atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> {
            try (Resp r = new Resp(redisPort)) {
                return Faults.topicEmpty(r, shared) && Faults.topicEmpty(r, own);
            }
        });
        Receiver.Tally tally = receiver.tally(shared);
        Map<String, List<Receiver.Delivery>> unexplained = new LinkedHashMap<>(tally.duplicates());
        held.forEach(id -> {
            List<Receiver.Delivery> ds = unexplained.get(id);
            if (ds != null && ds.size() == 2 && !"r3".equals(ds.get(1).via())) {
                unexplained.remove(id); // the one allowed duplicate: the holder was lost for longer than the lease
            }
        });
        System.out.printf("%s for %d ms (3 leases of %d ms) holding %d jobs: reruns elsewhere %s after the loss "
                + "(worst: lease + %d ms), by %s; late acks %s; new work %d ms after it was back; %s; duplicates not "
                + "explained by the loss: %d %s%n", fault.what(), LOSS_MS, Faults.LEASE_MS, held.size(), rerunAfter,
                worstRerun - Faults.LEASE_MS, rerunBy, lateAcks, newWorkAfter, tally, unexplained.size(), unexplained);

        assertEquals(held.size(), rerunAfter.size(), "every job of the lost replica ran again elsewhere: " + rerunAfter);
        assertTrue(rerunBy.stream().noneMatch("r3"::equals), "reruns by the lost replica itself: " + rerunBy);
        assertTrue(worstRerun <= RERUN_BOUND_MS, "a lost job ran again " + worstRerun + " ms after the loss, more than "
                + "lease + 2 s (" + RERUN_BOUND_MS + " ms): " + rerunAfter);
        assertEquals("refused", lateAcks, "the lost replica's late acks");
        assertEquals(Map.of(), unexplained, "duplicates other than one rerun of each lost job elsewhere");
        assertTrue(newWorkAfter >= 0 && newWorkAfter <= NEW_WORK_BOUND_MS, "new work taken " + newWorkAfter
                + " ms after the replica was back (-1: never), more than " + NEW_WORK_BOUND_MS + " ms");
        assertEquals(JOBS, tally.distinct(), "every job delivered");
    }
}
