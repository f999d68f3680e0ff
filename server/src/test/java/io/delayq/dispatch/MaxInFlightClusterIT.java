package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisCluster;
import io.delayq.support.AppProcess;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * The concurrency cap on a Redis Cluster of 3 masters with {@code delayq.partitions=3}: each
 * partition's share (1 of a cap of 3) is counted and enforced in its own slot, and the wake-ups
 * of freed slots go over the partitions' sharded channels (SPUBLISH), so two replicas together
 * run at most 3 jobs at once and keep the cap busy.
 */
class MaxInFlightClusterIT {

    @Test
    void twoReplicasOnAClusterRunAtMostTheCapWithAShareInEveryPartition() throws Exception {
        String topic = Topics.fresh("cl-cap");
        try (RedisCluster cluster = RedisCluster.start(); Receiver receiver = new Receiver()) {
            Map<String, AppProcess> apps = new HashMap<>();
            try {
                for (String via : List.of("r1", "r2")) {
                    apps.put(via, AppProcess.start("cap-" + via, cluster, Map.of("delayq.partitions", "3",
                            "delayq.topics." + topic + ".http.url", receiver.url(via),
                            "delayq.topics." + topic + ".max-in-flight", "3")));
                }
                receiver.holdFor(100);
                int n = 60;
                HttpResponse<String> r = apps.get("r1").post("/jobs/batch",
                        ReplicasIT.jobsJson(topic, "c", 0, n, System.currentTimeMillis(), 0));
                assertEquals(200, r.statusCode(), r.body());
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> receiver.completed.size() == n);
                List<Long> starts = new ArrayList<>();
                receiver.deliveries.forEach((id, d) -> {
                    assertEquals(1, d.size(), id + " delivered once");
                    starts.add(d.get(0).receivedMs());
                });
                starts.sort(null);
                long span = starts.get(n - 1) + 100 - starts.get(0);
                double average = receiver.busyNanos.get() / 1e6 / span;
                System.out.printf("cluster, max-in-flight 3 over 3 partitions, 2 replicas, %d jobs of 100 ms: most at"
                        + " once %d, average %.2f over %d ms%n", n, receiver.peakInProgress.get(), average, span);
                assertTrue(receiver.peakInProgress.get() <= 3, "more than 3 at once: " + receiver.peakInProgress.get());
                // Ids hash unevenly over 3 partitions (a share of 1 each): the emptiest ends first.
                assertTrue(average >= 1.5, "the shares were not kept busy: " + average + " on average");
            } finally {
                apps.values().forEach(AppProcess::close);
            }
        }
    }
}
