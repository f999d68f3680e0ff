package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.EnqueueStream;
import io.delayq.support.Receiver;
import io.delayq.support.RedisSentinelProcess;
import io.delayq.support.Topics;

/**
 * Redis Sentinel failover under load: two replicas of the packaged application use a sentinel
 * client ({@code quarkus.redis.client-type=sentinel}) with {@code delayq.durability.replicas=1},
 * and the master is SIGKILLed in the middle of a steady stream of enqueues. Every accepted job
 * must still be delivered, and deliveries must resume by themselves once a replica is promoted.
 */
class SentinelFailoverIT {
    static final int PER_SECOND = 50;
    static final long DUE_IN_MS = 200;
    static final long LEASE_MS = 5000;

    @Test
    void everyAcceptedJobIsDeliveredAfterTheMasterIsKilledAndDeliveriesResumeWithinTheFailover() throws Exception {
        String topic = Topics.fresh("sentinel");
        // Two replicas: after the failover the promoted master still has one, so WAIT 1 can succeed.
        try (RedisSentinelProcess redis = RedisSentinelProcess.start("dq-failover", 2, 3);
                Receiver receiver = new Receiver()) {
            Map<String, String> settings = Map.of(
                    // Passed after AppProcess' own quarkus.redis.hosts, so these -D values win.
                    "quarkus.redis.client-type", "sentinel", "quarkus.redis.hosts", redis.sentinelHosts(),
                    "quarkus.redis.master-name", redis.masterName(),
                    "delayq.durability.replicas", "1", "delayq.durability.timeout", "1s",
                    "delayq.topics." + topic + ".http.url", receiver.url(),
                    // A take whose reply died with the master leases its jobs to nobody: they come
                    // back when that lease expires, so keep it short here.
                    "delayq.dispatch.lease", LEASE_MS + "ms", "delayq.dispatch.heartbeat", "1s");
            try (AppProcess a = AppProcess.start("sentinel-a", redis.masterPort(), settings);
                    AppProcess b = AppProcess.start("sentinel-b", redis.masterPort(), settings);
                    EnqueueStream stream = new EnqueueStream(topic, "s", DUE_IN_MS, List.of(a, b))) {
                stream.start(PER_SECOND);
                Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> receiver.distinct() >= 3 * PER_SECOND);

                long killedAt = System.currentTimeMillis();
                int oldMaster = redis.kill9Master();
                int newMaster = redis.awaitFailover(Duration.ofSeconds(20));
                long promotedAt = System.currentTimeMillis();
                long promotedMs = promotedAt - killedAt;
                // The stream goes on until jobs enqueued on the new master are being delivered.
                Awaitility.await("jobs enqueued after the promotion delivered").atMost(Duration.ofSeconds(30))
                        .until(() -> stream.accepted().stream().filter(s -> s.sentMs() > promotedAt)
                                .filter(s -> receiver.deliveries.containsKey(s.id())).count() >= 2 * PER_SECOND);
                stream.stop();
                long stoppedAt = System.currentTimeMillis();

                List<EnqueueStream.Sent> accepted = stream.accepted();
                // A job whose take reply died with the master returns when its lease expires.
                Awaitility.await().atMost(Duration.ofMillis(LEASE_MS + 15_000)).untilAsserted(() -> assertEquals(List.of(),
                        accepted.stream().map(EnqueueStream.Sent::id).filter(id -> !receiver.deliveries.containsKey(id))
                                .toList(), "accepted jobs not delivered"));

                long gap = receiver.longestGap(killedAt - 1000, stoppedAt);
                long firstAfter = accepted.stream().filter(s -> s.sentMs() > killedAt)
                        .mapToLong(s -> receiver.deliveries.get(s.id()).get(0).receivedMs() - killedAt).min().orElse(-1);
                long refused = stream.replies().size() - accepted.size();
                long twice = receiver.deliveries.values().stream().filter(d -> d.size() > 1).count();
                System.out.printf("sentinel failover: master %d killed, %d promoted after %d ms; longest delivery gap "
                        + "%d ms; first delivery of a job enqueued after the kill %d ms after the kill; POSTs %d accepted "
                        + "(all delivered), %d refused %s; %d delivered more than once%n", oldMaster, newMaster, promotedMs, gap, firstAfter,
                        accepted.size(), refused, stream.statusCounts(), twice);

                assertTrue(firstAfter > 0, "jobs enqueued after the kill were accepted and delivered");
                assertTrue(Set.of(201, 503).containsAll(stream.statusCounts().keySet()),
                        "enqueues answered 201, or 503 during the failover: " + stream.statusCounts());
                assertTrue(RedisSentinelProcess.info(newMaster, "commandstats").contains("cmdstat_wait:"),
                        "enqueues on the new master waited for a replica (WAIT)");
                // The sentinels take down-after plus an election and a promotion (within the failover
                // timeout; on a loaded machine a second failover can follow the first), then delayq
                // has a few seconds to find the new master. A job whose take or ack the failover lost
                // (asynchronous replication) is in flight under a lease nobody holds: reclaims wait one
                // lease after Redis answers again (ReclaimGate), so that one can take that much longer.
                long bound = RedisSentinelProcess.DOWN_AFTER_MS + RedisSentinelProcess.FAILOVER_TIMEOUT_MS + LEASE_MS + 3000;
                assertTrue(gap <= bound, "deliveries stopped for " + gap + " ms (the promotion took " + promotedMs
                        + " ms), more than " + bound + " ms");
                try (Resp r = new Resp(newMaster)) {
                    Awaitility.await().atMost(Duration.ofSeconds(15))
                            .until(() -> r.num("HLEN", Topics.keys(topic) + "jobs") == 0);
                    assertEquals(0L, r.num("ZCARD", Topics.keys(topic) + "inflight"), "nothing left in flight");
                }
                for (AppProcess app : List.of(a, b)) {
                    assertTrue(app.isAlive(), app + " survived the failover");
                    assertEquals(200, app.status("/q/health/ready"), app + " is ready again");
                }
            }
        }
    }
}
