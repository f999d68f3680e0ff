package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisCluster;
import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * One master of a 3-master Redis Cluster frozen with SIGSTOP (its TCP connections stay open and
 * hang, as after a lost host), with a node timeout long enough that the cluster neither fails it
 * over nor goes down: only the replica's own handling of the hung node is at stake. The other
 * masters' pub/sub connections are dropped meanwhile (CLIENT KILL), so the replica must subscribe
 * again while one master hangs. Partitions on the other masters are still woken and taken: each job
 * due 200 ms after its enqueue is delivered within well under a second (the safety net polls every
 * 10 s here, so only a wake-up can make it), although the frozen master's partitions have jobs due
 * whose takes hang. After SIGCONT the frozen master's partitions deliver again, and their wake-ups
 * come back.
 */
class FrozenMasterIT {
    private static final int PARTITIONS = 48;
    private static final Duration FREEZE = Duration.ofSeconds(12);
    private static final long DUE_IN_MS = 200;
    /** Lateness allowed to a woken job: a wake-up, a take and an HTTP delivery, on a loaded CI machine. */
    private static final long ON_TIME_MS = 700;

    @Test
    void partitionsOfTheOtherMastersAreWokenAndTakenOnTimeWhileOneMasterIsFrozenAndItsOwnResumeAfter() throws Exception {
        String topic = Topics.fresh("frozen");
        try (RedisCluster cluster = RedisCluster.start(3, 0, Duration.ofSeconds(60)); Receiver receiver = new Receiver();
                AppProcess app = AppProcess.start("frozen-r1", cluster, Map.of("delayq.partitions",
                        Integer.toString(PARTITIONS), "delayq.dispatch.safety-net", "10s",
                        "delayq.topics." + topic + ".http.url", receiver.url("r1")))) {
            // Far jobs in every partition: their keys tell which master holds which partition.
            String[] idOf = new String[PARTITIONS];
            for (int i = 0, found = 0; found < PARTITIONS; i++) {
                int p = Math.floorMod(("far" + i).hashCode(), PARTITIONS);
                if (idOf[p] == null) {
                    idOf[p] = "far" + i;
                    found++;
                }
            }
            StringBuilder far = new StringBuilder("[");
            long later = System.currentTimeMillis() + 3_600_000;
            for (int p = 0; p < PARTITIONS; p++) {
                far.append(p == 0 ? "" : ",").append("{\"topic\":\"").append(topic).append("\",\"id\":\"").append(idOf[p])
                        .append("\",\"runAt\":\"").append(Instant.ofEpochMilli(later)).append("\"}");
            }
            assertEquals(200, app.post("/jobs/batch", far.append(']').toString()).statusCode());
            Map<Integer, Integer> masterOf = new TreeMap<>();
            Map<Integer, String> channelOf = new TreeMap<>();
            Pattern partition = Pattern.compile(Pattern.quote(topic) + "#(\\d+)");
            cluster.keysByMaster("*" + topic + "*:jobs").forEach((master, keys) -> keys.forEach(k -> {
                Matcher m = partition.matcher(k);
                assertTrue(m.find(), k);
                masterOf.put(Integer.parseInt(m.group(1)), master);
                channelOf.put(Integer.parseInt(m.group(1)), k.replace(":jobs", ":wake"));
            }));
            assertEquals(PARTITIONS, masterOf.size(), "every partition found on a master: " + masterOf);
            List<Integer> masters = cluster.masters(); // asked before the freeze: it asks the first node
            int frozen = masters.get(0);
            List<Integer> healthy = masterOf.entrySet().stream().filter(e -> e.getValue() != frozen).map(Map.Entry::getKey)
                    .toList();
            List<Integer> ofFrozen = masterOf.entrySet().stream().filter(e -> e.getValue() == frozen).map(Map.Entry::getKey)
                    .toList();
            assertFalse(ofFrozen.isEmpty(), "partitions on the frozen master");
            assertEquals(PARTITIONS, healthy.size() + ofFrozen.size());

            // Jobs due just after the freeze in every partition of the frozen master: their takes hang.
            long dueSoon = System.currentTimeMillis() + 1000;
            Map<String, Long> stuck = new LinkedHashMap<>();
            for (int p : ofFrozen) {
                String id = idIn(p, "stuck");
                stuck.put(id, dueSoon);
                assertEquals(201, app.post("/jobs", job(topic, id, Instant.ofEpochMilli(dueSoon))).statusCode());
            }

            long pid = cluster.pid(frozen);
            signal("STOP", pid);
            Map<String, Long> lateness = new LinkedHashMap<>();
            Map<String, Long> runAts = new LinkedHashMap<>();
            long frozenAt = System.currentTimeMillis();
            try {
                // The other masters drop their pub/sub clients: the replica must subscribe again there
                // while the frozen master hangs.
                for (int m : masters) {
                    if (m != frozen) {
                        try (Resp r = cluster.node(m)) {
                            r.call("CLIENT", "KILL", "TYPE", "pubsub");
                        }
                    }
                }
                for (int round = 0; System.currentTimeMillis() - frozenAt < FREEZE.toMillis(); round++) {
                    int p = healthy.get(round % healthy.size());
                    String id = idIn(p, "h" + round + "-");
                    HttpResponse<String> r = app.post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"" + id
                            + "\",\"delayMs\":" + DUE_IN_MS + "}");
                    assertEquals(201, r.statusCode(), "enqueue for a healthy master's partition " + p + ": " + r.body());
                    runAts.put(id, runAtOf(r));
                    Thread.sleep(250); // pacing of the producer, not a wait for a condition
                }
                Awaitility.await().atMost(Duration.ofSeconds(3)).until(() -> runAts.keySet().stream()
                        .allMatch(receiver.deliveries::containsKey));
                runAts.forEach((id, runAt) -> lateness.put(id, receiver.deliveries.get(id).get(0).receivedMs() - runAt));
                assertTrue(stuck.keySet().stream().noneMatch(receiver.deliveries::containsKey),
                        "the frozen master's jobs cannot have been taken while it was frozen");
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                Map<String, String> missing = new TreeMap<>();
                runAts.forEach((id, runAt) -> {
                    if (!receiver.deliveries.containsKey(id)) {
                        // The state of the first few only: a stalled replica takes seconds to answer each.
                        missing.put(id, "partition " + Math.floorMod(id.hashCode(), PARTITIONS) + ", due "
                                + (runAt - frozenAt) + " ms into the freeze"
                                + (missing.size() < 3 ? ", now " + stateOf(app, topic, id) : ""));
                    }
                });
                throw new AssertionError("jobs of healthy masters' partitions not delivered while one master was frozen: "
                        + missing, e);
            } finally {
                signal("CONT", pid);
            }
            long[] sorted = lateness.values().stream().mapToLong(Long::longValue).sorted().toArray();
            System.out.printf("frozen master: %d jobs of the other masters' partitions during a %d s freeze: lateness "
                    + "p50 %d ms, max %d ms%n", sorted.length, FREEZE.toSeconds(), sorted[sorted.length / 2],
                    sorted[sorted.length - 1]);
            assertTrue(sorted.length >= FREEZE.toMillis() / 400, "jobs enqueued during the freeze: " + sorted.length);
            assertTrue(lateness.values().stream().allMatch(l -> l >= 0 && l < ON_TIME_MS),
                    "woken and taken on time while a master was frozen (ms after runAt): " + lateness);

            // Thawed: the frozen master's jobs are taken, and its partitions are woken again.
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> stuck.keySet().stream()
                    .allMatch(receiver.deliveries::containsKey));
            Set<String> frozenChannels = new TreeSet<>();
            ofFrozen.forEach(p -> frozenChannels.add(channelOf.get(p)));
            try (Resp r = cluster.node(frozen)) {
                Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> frozenChannels.stream().allMatch(
                        ch -> "1".equals(String.valueOf(r.list("PUBSUB", "SHARDNUMSUB", ch).get(1)))));
            }
            List<Long> after = new ArrayList<>();
            for (int round = 0; round < 4; round++) {
                String id = idIn(ofFrozen.get(round % ofFrozen.size()), "t" + round + "-");
                HttpResponse<String> r = app.post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"" + id
                        + "\",\"delayMs\":" + DUE_IN_MS + "}");
                assertEquals(201, r.statusCode(), r.body());
                long runAt = runAtOf(r);
                Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> receiver.deliveries.containsKey(id));
                after.add(receiver.deliveries.get(id).get(0).receivedMs() - runAt);
            }
            System.out.println("frozen master: lateness of its partitions' jobs after the thaw " + after + " ms");
            assertTrue(after.stream().allMatch(l -> l >= 0 && l < ON_TIME_MS), "woken on time after the thaw: " + after);
            List<String> twice = receiver.deliveries.entrySet().stream().filter(e -> e.getValue().size() > 1)
                    .map(Map.Entry::getKey).toList();
            assertEquals(List.of(), twice, "jobs delivered more than once");
        }
    }

    /** An id in partition {@code p} ({@code delayq.partitions} of them: the id's hashCode mod that). */
    private static String idIn(int p, String prefix) {
        for (int i = 0;; i++) {
            if (Math.floorMod((prefix + i).hashCode(), PARTITIONS) == p) {
                return prefix + i;
            }
        }
    }

    /** The job as GET /jobs says, or why it could not be had (a stalled replica may not answer). */
    private static String stateOf(AppProcess app, String topic, String id) {
        try {
            return app.getResponse("/jobs/" + topic + "/" + id).body();
        } catch (RuntimeException e) {
            return "(GET /jobs failed: " + e.getMessage() + ")";
        }
    }

    private static String job(String topic, String id, Instant runAt) {
        return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"runAt\":\"" + runAt + "\"}";
    }

    private static long runAtOf(HttpResponse<String> r) {
        return Instant.parse(r.body().replaceAll(".*\"runAt\":\"([^\"]+)\".*", "$1")).toEpochMilli();
    }

    private static void signal(String signal, long pid) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        assertEquals(0, kill.waitFor(), "kill -" + signal + " " + pid);
    }
}
