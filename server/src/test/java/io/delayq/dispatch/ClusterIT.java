package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.support.AppProcess;
import io.delayq.support.Receiver;
import io.delayq.dev.RedisCluster;
import io.delayq.dev.Resp;
import io.delayq.support.Topics;

/**
 * Two replicas of the packaged server on a local Redis Cluster (3 masters + 3 replicas,
 * {@code quarkus.redis.client-type=cluster}) with {@code delayq.partitions=3}: ingestion,
 * dispatch, the dead set, {@code GET /topics}, metrics, the safety net, the idle cost and drain,
 * each on its own topic. The cluster and the replicas are shared by the tests (a cluster and two
 * JVMs take a few seconds to start): the idle-cost test needs the others' jobs done, and the
 * drain test stops one replica, so the order is fixed.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration SAFETY_NET = Duration.ofSeconds(1);
    private static final Duration IDLE_WINDOW = Duration.ofSeconds(6);
    private static final String INGEST = Topics.fresh("cl-ingest");
    private static final String DEAD = Topics.fresh("cl-dead");
    private static final String WAKE = Topics.fresh("cl-wake");
    private static final String DRAIN = Topics.fresh("cl-drain");
    private static final String MOVED = Topics.fresh("cl-moved");
    /** Configured, served by neither replica: a replica keeps gauges only for topics it serves or configures. */
    private static final String COUNTS = Topics.fresh("cl-counts");

    private static RedisCluster cluster;
    private static final Map<String, Receiver> receivers = new HashMap<>();
    private static AppProcess r1;
    private static AppProcess r2;

    @BeforeAll
    static void startClusterAndTwoReplicas() {
        cluster = RedisCluster.start();
        for (String topic : List.of(INGEST, DEAD, WAKE, DRAIN, MOVED)) {
            receivers.put(topic, new Receiver());
        }
        receivers.get(DEAD).failBy(d -> true);
        r1 = AppProcess.start("cluster-r1", cluster, settings("r1"));
        r2 = AppProcess.start("cluster-r2", cluster, settings("r2"));
    }

    private static Map<String, String> settings(String replica) {
        Map<String, String> s = new HashMap<>(Map.of("delayq.partitions", "3", "delayq.drain.timeout", "2s",
                "delayq.dispatch.safety-net", SAFETY_NET.toMillis() + "ms",
                "delayq.topics." + DEAD + ".retry.initial", "100ms"));
        receivers.forEach((topic, receiver) -> s.put("delayq.topics." + topic + ".http.url", receiver.url(replica)));
        s.put("delayq.topics." + COUNTS + ".max-attempts", "3");
        // The dashboard history's last flush of the earlier tests' counts (up to 10 s after their
        // jobs) would fall in the idle-cost window: it is the tail of that work, not idle cost.
        // HistoryIT measures the history's own cost, idle included.
        s.put("delayq.history.enabled", "false");
        return s;
    }

    @AfterAll
    static void stopEverything() {
        for (AutoCloseable c : new AutoCloseable[] { r1, r2 }) {
            closeQuietly(c);
        }
        receivers.values().forEach(ClusterIT::closeQuietly);
        closeQuietly(cluster);
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            if (c != null) {
                c.close();
            }
        } catch (Exception e) {
            System.err.println("closing " + c + ": " + e);
        }
    }

    @Test
    @Order(1)
    void aBatchOf1000AndSingleJobsAreDeliveredOnceEachByBothReplicasWithPartitionsOnEveryMaster() throws Exception {
        // This cluster keeps Redis' default cluster-require-full-coverage yes: said at start-up.
        assertTrue(r1.logText().contains("cluster-require-full-coverage yes"), "start-up WARN about full coverage");
        Receiver receiver = receivers.get(INGEST);
        long start = System.currentTimeMillis() + 3000;
        HttpResponse<String> batch = r1.post("/jobs/batch", ReplicasIT.jobsJson(INGEST, "b", 0, 1000, start, 2000));
        assertEquals(200, batch.statusCode(), batch.body());
        JsonNode items = JSON.readTree(batch.body());
        assertEquals(1000, items.size(), "one result per item");
        for (JsonNode item : items) {
            assertEquals(201, item.get("status").asInt(), item.toString());
        }
        for (int i = 0; i < 100; i++) {
            AppProcess via = i % 2 == 0 ? r1 : r2;
            HttpResponse<String> r = via.post("/jobs", "{\"topic\":\"" + INGEST + "\",\"id\":\"s" + i
                    + "\",\"runAt\":\"" + Instant.ofEpochMilli(start + 20L * i) + "\",\"payload\":{\"n\":" + i + "}}");
            assertEquals(201, r.statusCode(), r.body());
        }

        // While the jobs wait, their keys are in Redis: which masters hold the topic's partitions.
        Map<Integer, List<String>> keys = cluster.keysByMaster("*" + INGEST + "*");
        System.out.println("cluster ingest: keys of " + INGEST + " by master: " + keys);
        Set<Integer> holding = keys.entrySet().stream().filter(e -> !e.getValue().isEmpty()).map(Map.Entry::getKey)
                .collect(Collectors.toSet());

        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> receiver.distinct() == 1100);
        List<String> twice = receiver.deliveries.entrySet().stream().filter(e -> e.getValue().size() > 1)
                .map(Map.Entry::getKey).sorted().toList();
        assertEquals(List.of(), twice, "jobs delivered more than once");
        for (int i = 0; i < 1000; i++) {
            assertTrue(receiver.deliveries.containsKey("b" + i), "b" + i + " never delivered");
        }
        for (int i = 0; i < 100; i++) {
            assertTrue(receiver.deliveries.containsKey("s" + i), "s" + i + " never delivered");
        }
        Map<String, Long> byReplica = receiver.deliveries.values().stream().flatMap(List::stream)
                .collect(Collectors.groupingBy(Receiver.Delivery::via, TreeMap::new, Collectors.counting()));
        System.out.println("cluster ingest: deliveries by replica " + byReplica);
        assertTrue(byReplica.getOrDefault("r1", 0L) > 0 && byReplica.getOrDefault("r2", 0L) > 0,
                "both replicas took jobs: " + byReplica);
        // Acked jobs leave nothing behind on any master.
        Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertEquals(List.of(),
                cluster.keysByMaster("*" + INGEST + "*").values().stream().flatMap(List::stream)
                        .filter(k -> k.endsWith(":jobs") || k.endsWith(":inflight")).toList(),
                "job and inflight keys of the topic left"));
        assertEquals(Set.copyOf(cluster.masters()), holding, "masters holding keys of the topic's 3 partitions: " + keys);
    }

    @Test
    @Order(2)
    void jobsThatFailEveryAttemptReachTheDeadSetAndAreListedCountedAndMeasured() throws Exception {
        Receiver receiver = receivers.get(DEAD);
        StringBuilder batch = new StringBuilder("[");
        for (int i = 0; i < 6; i++) {
            batch.append(i == 0 ? "" : ",").append("{\"topic\":\"").append(DEAD).append("\",\"id\":\"x").append(i)
                    .append("\",\"maxAttempts\":2}");
        }
        assertEquals(200, r1.post("/jobs/batch", batch.append(']').toString()).statusCode());

        Awaitility.await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> {
            HttpResponse<String> dead = r2.getResponse("/topics/" + DEAD + "/dead?limit=10");
            assertEquals(200, dead.statusCode(), dead.body());
            assertEquals(6, JSON.readTree(dead.body()).size(), dead.body());
        });
        JsonNode dead = JSON.readTree(r2.get("/topics/" + DEAD + "/dead?limit=10"));
        Set<String> ids = new java.util.TreeSet<>();
        for (JsonNode d : dead) {
            ids.add(d.get("id").asText());
            assertEquals(2, d.get("attempts").asInt(), d.toString());
            assertNotNull(d.get("lastError"), "the dead job says why: " + d);
        }
        assertEquals(Set.of("x0", "x1", "x2", "x3", "x4", "x5"), ids);
        for (int i = 0; i < 6; i++) {
            assertEquals(2, receiver.deliveries.get("x" + i).size(), "x" + i + ": maxAttempts deliveries");
            assertTrue(r1.get("/jobs/" + DEAD + "/x" + i).contains("\"state\":\"dead\""), "x" + i + " is dead");
        }
        // Both count across every partition, on every master.
        assertAll("the dead count in GET /topics and in the gauge",
                () -> assertEquals(6, topicView(r1, DEAD).get("dead").asInt()),
                () -> Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertTrue(
                        r1.get("/q/metrics").contains("delayq_queue_dead{topic=\"" + DEAD + "\"} 6.0"),
                        metricLines(r1, DEAD))));
    }

    @Test
    @Order(3)
    void topicsAndMetricsCountTheJobsOfEveryPartitionOnEveryMaster() throws Exception {
        String topic = COUNTS;
        long later = System.currentTimeMillis() + 3_600_000;
        HttpResponse<String> r = r2.post("/jobs/batch", ReplicasIT.jobsJson(topic, "c", 0, 9, later, 60_000));
        assertEquals(200, r.statusCode(), r.body());

        assertAll("GET /topics on both replicas, and the gauges",
                () -> assertTopicCounts(r1, topic, later),
                () -> assertTopicCounts(r2, topic, later),
                () -> Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertTrue(
                        r1.get("/q/metrics").contains("delayq_queue_scheduled{topic=\"" + topic + "\"} 9.0"),
                        metricLines(r1, topic))),
                () -> assertEquals(List.of(), r1.get("/q/metrics").lines().filter(l -> l.startsWith("delayq_queue_"))
                        .filter(l -> l.endsWith("NaN")).toList(), "delayq gauges without a value"));
    }

    private static void assertTopicCounts(AppProcess app, String topic, long nextDue) throws Exception {
        JsonNode view = topicView(app, topic);
        assertEquals(9, view.get("scheduled").asInt(), view.toString());
        assertEquals(0, view.get("inflight").asInt(), view.toString());
        assertEquals(0, view.get("dead").asInt(), view.toString());
        assertEquals(Instant.ofEpochMilli(nextDue).toString(), view.get("nextDueAt").asText(), view.toString());
        assertTrue(topicView(app, INGEST).get("served").asBoolean(), app + " says it serves " + INGEST);
    }

    /**
     * A partition whose "next" lower bound is already at or before now gets no wake-up message
     * for a new, later job (the enqueue script publishes only when a job becomes the earliest):
     * the same state as a lost message. Only the safety-net poll can then tell the takers, and it
     * must do so within its interval (+50 % jitter). The state is made by setting each partition's
     * {@code next} key (found by name on the masters) to 0, a legal lower bound.
     */
    @Test
    @Order(4)
    void aJobWhoseWakeUpIsLostFiresWithinTheSafetyNetInterval() throws Exception {
        Receiver receiver = receivers.get(WAKE);
        scheduleFarJobsInEveryPartition(WAKE);
        Map<Integer, List<String>> nextKeys = new HashMap<>();
        cluster.keysByMaster("*" + WAKE + "*").forEach((master, keys) -> nextKeys.put(master,
                keys.stream().filter(k -> k.endsWith(":next")).toList()));
        assertEquals(3, nextKeys.values().stream().mapToInt(List::size).sum(),
                "one 'next' key per partition (30 far jobs fill all 3): " + nextKeys);

        nextKeys.forEach((master, keys) -> {
            try (Resp redis = cluster.node(master)) {
                keys.forEach(k -> redis.call("SET", k, "0"));
            }
        });
        HttpResponse<String> r = r2.post("/jobs", "{\"topic\":\"" + WAKE + "\",\"id\":\"lost\",\"delayMs\":1500}");
        assertEquals(201, r.statusCode(), r.body());
        long runAt = Instant.parse(JSON.readTree(r.body()).get("runAt").asText()).toEpochMilli();

        long worst = SAFETY_NET.toMillis() * 7 / 4 + 500; // the longest pause between polls, and the take
        Awaitility.await().atMost(Duration.ofMillis(runAt - System.currentTimeMillis() + worst + 5_000))
                .until(() -> receiver.deliveries.containsKey("lost"));
        long late = receiver.deliveries.get("lost").get(0).receivedMs() - runAt;
        System.out.println("cluster safety net: the job without a wake-up fired " + late + " ms after its runAt");
        assertTrue(late >= 0, "fired " + (-late) + " ms early");
        assertTrue(late <= worst, "fired " + late + " ms after its runAt, more than the safety net's " + worst + " ms");
        assertFalse(receiver.deliveries.keySet().stream().anyMatch(id -> id.startsWith("far")), "far jobs are not due");
    }

    /**
     * "Cheap when idle" on a cluster: an idle replica costs each master one command per second
     * for each served partition that master holds (its safety-net poll: one MGET of a partition's
     * two head keys; no command may read two slots, so a cluster cannot have the single Redis'
     * one MGET for everything). Here 5 topics of 3 partitions spread over 3 masters: 5 partitions
     * per master, so about 4 commands/s (a poll every 1.25-1.75 s), per master and idle replica. Commands the test and the cluster itself
     * send (INFO, REPLCONF, CLUSTER) are left out; everything else, scripts' inner commands
     * included, counts.
     */
    @Test
    @Order(5)
    void idleReplicasCostEachMasterOneCommandPerSecondPerPartitionItHolds() throws Exception {
        List<Integer> masters = cluster.masters();
        Map<Integer, Map<String, Long>> before = new HashMap<>();
        for (int m : masters) {
            before.put(m, cluster.commandCalls(m));
        }
        long t0 = System.nanoTime();
        Thread.sleep(IDLE_WINDOW.toMillis()); // a measurement window, not a wait for a condition
        double seconds = (System.nanoTime() - t0) / 1e9;
        Map<Integer, Map<String, Long>> used = new TreeMap<>();
        for (int m : masters) {
            Map<String, Long> delta = new TreeMap<>();
            cluster.commandCalls(m).forEach((cmd, n) -> {
                long d = n - before.get(m).getOrDefault(cmd, 0L);
                if (d > 0 && !cmd.equals("info") && !cmd.equals("replconf") && !cmd.startsWith("cluster")) {
                    delta.put(cmd, d);
                }
            });
            used.put(m, delta);
        }
        System.out.printf("cluster idle: commands of 2 idle replicas in %.1f s, by master: %s%n", seconds, used);
        for (Map.Entry<Integer, Map<String, Long>> e : used.entrySet()) {
            double partitionsHere = receivers.size() * 3 / (double) masters.size(); // every topic's 3, spread
            // The poll's interval is the safety net (1 s here) plus 25-75 % jitter: a window of W
            // seconds sees at most floor(W) + 1 polls of each partition (one more than W when a poll
            // falls on each edge), each one MGET; everything else (the connections' PINGs, a TIME)
            // at most one command a second per replica, whatever the partitions.
            long mgets = e.getValue().getOrDefault("mget", 0L);
            long others = e.getValue().values().stream().mapToLong(Long::longValue).sum() - mgets;
            double pollsPerPartition = mgets / 2.0 / partitionsHere;
            assertTrue(pollsPerPartition <= Math.floor(seconds) + 1, String.format(
                    "master %d: %.1f polls per partition per idle replica in %.1f s (%.0f partitions) %s", e.getKey(),
                    pollsPerPartition, seconds, partitionsHere, e.getValue()));
            assertTrue(others / 2.0 / seconds <= 1.0, String.format(
                    "master %d: %.1f commands/s per idle replica besides the polls %s", e.getKey(), others / 2.0 / seconds,
                    e.getValue()));
        }
    }

    /**
     * Resharding moves a partition's slot to another master; Redis then drops the subscriptions
     * of its sharded wake-up channel (SUNSUBSCRIBE). The replicas must subscribe again on the new
     * master: jobs of that partition due 150 ms after their enqueue keep firing on time, not at the
     * next safety-net poll (up to 1.75 s later).
     */
    @Test
    @Order(6)
    void aPartitionWhoseSlotMovesToAnotherMasterIsStillWokenOnTime() throws Exception {
        Receiver receiver = receivers.get(MOVED);
        scheduleFarJobsInEveryPartition(MOVED);
        String key = cluster.keysByMaster("*" + MOVED + "#0*:jobs").values().stream().flatMap(List::stream)
                .findFirst().orElseThrow();
        int slot = cluster.keySlot(key);
        int from = cluster.masterOfSlot(slot);
        int to = cluster.masters().stream().filter(m -> m != from).findFirst().orElseThrow();
        cluster.moveSlot(slot, to);
        assertEquals(to, cluster.masterOfKey(key), key + " moved");
        String channel = key.replace(":jobs", ":wake");
        try (Resp target = cluster.node(to)) {
            assertEquals(1L, target.num("EXISTS", key), "its keys moved with it");
            // Both replicas subscribe to the channel again, now on the new master.
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(
                    () -> "2".equals(String.valueOf(target.list("PUBSUB", "SHARDNUMSUB", channel).get(1))));
        }

        List<Long> lateness = new ArrayList<>();
        for (int round = 0; round < 4; round++) {
            String id = idInPartition0("m" + round + "-");
            HttpResponse<String> r = (round % 2 == 0 ? r1 : r2).post("/jobs", "{\"topic\":\"" + MOVED + "\",\"id\":\""
                    + id + "\",\"delayMs\":150}");
            assertEquals(201, r.statusCode(), r.body());
            long runAt = Instant.parse(JSON.readTree(r.body()).get("runAt").asText()).toEpochMilli();
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> receiver.deliveries.containsKey(id));
            lateness.add(receiver.deliveries.get(id).get(0).receivedMs() - runAt);
        }
        System.out.println("cluster slot move: lateness of partition 0's jobs after its slot moved " + lateness + " ms");
        assertTrue(lateness.stream().allMatch(l -> l >= 0 && l < 600), "woken on time after the move: " + lateness);
    }

    /** 30 jobs due in an hour: every partition of the topic has keys (found on the masters by name). */
    private static void scheduleFarJobsInEveryPartition(String topic) throws Exception {
        long far = System.currentTimeMillis() + 3_600_000;
        assertEquals(200, r1.post("/jobs/batch", ReplicasIT.jobsJson(topic, "far", 0, 30, far, 0)).statusCode());
    }

    /** An id that {@code delayq.partitions=3} puts in partition 0 (the partition is the id's hashCode mod 3). */
    private static String idInPartition0(String prefix) {
        for (int i = 0;; i++) {
            if (Math.floorMod((prefix + i).hashCode(), 3) == 0) {
                return prefix + i;
            }
        }
    }

    @Test
    @Order(7)
    void aSigtermedReplicaPutsItsRunningJobsBackAndTheOtherReplicaRunsThem() throws Exception {
        Receiver receiver = receivers.get(DRAIN);
        // r2's first deliveries hang (a slow target); everything else finishes at once.
        receiver.holdBy(d -> "r2".equals(d.via()) && receiver.deliveries.get(d.id()).size() == 1 ? 60_000 : 0);
        long start = System.currentTimeMillis() + 500;
        assertEquals(200, r1.post("/jobs/batch", ReplicasIT.jobsJson(DRAIN, "d", 0, 30, start, 1500)).statusCode());
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> receiver.distinct() == 30);
        List<String> held = receiver.deliveries.entrySet().stream()
                .filter(e -> "r2".equals(e.getValue().get(0).via())).map(Map.Entry::getKey).sorted().toList();
        assertFalse(held.isEmpty(), "r2 took none of the 30 jobs: nothing to drain");

        long t0 = System.nanoTime();
        r2.terminate();
        assertTrue(r2.waitForExit(Duration.ofSeconds(1 + 2 + 5)), "r2 exited within delay + drain timeout + margin");
        System.out.printf("cluster drain: r2 held %d job(s), exited %.1f s after SIGTERM%n", held.size(),
                (System.nanoTime() - t0) / 1e9);
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> receiver.completed.size() == 30);
        for (String id : held) {
            List<Receiver.Delivery> d = receiver.deliveries.get(id);
            assertEquals(2, d.size(), id + ": held by r2, then run again " + d);
            assertEquals("r1", d.get(1).via(), id + " ran again on the other replica");
            assertEquals(1, d.get(1).attempt(), id + ": an attempt interrupted by the drain is not counted");
        }
        Matcher m = Pattern.compile("put (\\d+) unfinished job\\(s\\) of " + Pattern.quote(DRAIN) + "#")
                .matcher(r2.logText());
        int putBack = 0;
        while (m.find()) {
            putBack += Integer.parseInt(m.group(1));
        }
        assertEquals(held.size(), putBack, "jobs r2's drain put back (its log)");
    }

    /**
     * An id is one job per topic when its partitions are on masters of their own: a job of a group
     * lives in its group's partition, and leaves a claim in its id's partition (another slot, another
     * master), so the same id with another group, or none, is refused (409 naming group) through
     * whichever replica, and the same id with the same group is the existing job (200).
     */
    @Test
    @Order(8)
    void anIdIsOneJobPerTopicWhenItsGroupsPartitionIsOnAnotherMaster() throws Exception {
        String id = idInPartition0("claim-");
        String ga = null;
        String gb = null;
        for (int i = 0; gb == null; i++) {
            if (Math.floorMod(("g" + i).hashCode(), 3) != 0) {
                if (ga == null) {
                    ga = "g" + i;
                } else {
                    gb = "g" + i;
                }
            }
        }
        String job = "{\"topic\":\"" + COUNTS + "\",\"id\":\"" + id + "\",\"delayMs\":3600000%s}";
        HttpResponse<String> first = r1.post("/jobs", job.formatted(",\"group\":\"" + ga + "\""));
        assertEquals(201, first.statusCode(), first.body());
        HttpResponse<String> again = r1.post("/jobs", job.formatted(",\"group\":\"" + ga + "\""));
        assertEquals(200, again.statusCode(), "the same id and group is the existing job: " + again.body());
        for (String other : List.of(",\"group\":\"" + gb + "\"", "")) {
            HttpResponse<String> r = r1.post("/jobs", job.formatted(other));
            assertEquals(409, r.statusCode(), other + ": " + r.body());
            assertEquals("group", JSON.readTree(r.body()).path("field").asText(), r.body());
        }
        HttpResponse<String> get = r1.getResponse("/jobs/" + COUNTS + "/" + id);
        assertEquals(200, get.statusCode(), get.body());
        assertEquals(ga, JSON.readTree(get.body()).path("group").asText(), "the first job, untouched: " + get.body());
    }

    /**
     * The listing pages through a topic whose 3 partitions are on 3 masters: 3 jobs a page, by an
     * opaque cursor, every scheduled job once (test 3's nine and test 8's one), then no cursor.
     */
    @Test
    @Order(9)
    void theListingPagesThroughEveryPartitionOnEveryMasterOnce() throws Exception {
        List<String> seen = new ArrayList<>();
        String cursor = null;
        for (int page = 0; page < 20; page++) {
            HttpResponse<String> r = r1.getResponse("/topics/" + COUNTS + "/jobs?state=scheduled&limit=3"
                    + (cursor == null ? "" : "&cursor=" + java.net.URLEncoder.encode(cursor, java.nio.charset.StandardCharsets.UTF_8)));
            assertEquals(200, r.statusCode(), r.body());
            JsonNode body = JSON.readTree(r.body());
            assertTrue(body.path("jobs").size() <= 3, r.body());
            body.path("jobs").forEach(j -> seen.add(j.path("id").asText()));
            cursor = body.path("cursor").isNull() ? null : body.path("cursor").asText();
            if (cursor == null) {
                break;
            }
        }
        assertEquals(null, cursor, "the last page has no cursor: " + seen);
        assertEquals(10, seen.size(), "every scheduled job of the topic: " + seen);
        assertEquals(10, new java.util.HashSet<>(seen).size(), "each once: " + seen);
    }

    private static JsonNode topicView(AppProcess app, String topic) throws Exception {
        HttpResponse<String> topics = app.getResponse("/topics");
        assertEquals(200, topics.statusCode(), app + ": GET /topics: " + topics.body());
        for (JsonNode t : JSON.readTree(topics.body())) {
            if (topic.equals(t.get("topic").asText())) {
                return t;
            }
        }
        throw new AssertionError(app + ": GET /topics does not list " + topic);
    }

    private static String metricLines(AppProcess app, String topic) {
        List<String> lines = new ArrayList<>();
        app.get("/q/metrics").lines().filter(l -> l.contains(topic) && l.startsWith("delayq_queue")).forEach(lines::add);
        return "metrics of " + topic + ": " + lines;
    }
}
