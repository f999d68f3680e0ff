package io.delayq.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.NetNs;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * The cancel of a running job whose holder never hears of it, on two replicas (lease 6 s): the
 * holder killed (SIGKILL) between the mark and its delivery (frozen when the cancel is recorded
 * through the other replica, then killed), or cut off in a network namespace while the cancel is
 * recorded. Either way the other replica's reclaim finds the mark when the lease expires and
 * removes the job: it never runs again, and leaves no dead entry. Both cases in one class (one
 * build of the jar and its fixtures for both).
 */
class CancelFaultsIT {
    /** Slots per replica; each replica holds that many of the 2 x SLOTS jobs. */
    static final int SLOTS = 2;

    /** Settings of replica {@code i}: the short lease, and the topic's target on {@code receiver}. */
    private static Map<String, String> settings(String topic, Receiver receiver, int i) {
        return Faults.merge(Faults.leaseSettings(), Faults.topic(topic, receiver.url("r" + i), SLOTS));
    }

    /** Enqueues 2 x SLOTS jobs through {@code via}, every call held by the receiver; returns those replica 2 holds. */
    private static List<String> runningOn2(AppProcess via, Receiver receiver, String topic,
            CompletableFuture<Void> released) {
        receiver.gateBy(d -> released);
        assertEquals(200, via.post("/jobs/batch", Faults.batch(topic, "c", 2 * SLOTS, 0)).statusCode());
        Awaitility.await("every job running").atMost(Duration.ofSeconds(30))
                .until(() -> receiver.tally(topic).distinct() == 2 * SLOTS);
        List<String> held = receiver.of(topic).entrySet().stream().filter(e -> "r2".equals(e.getValue().get(0).via()))
                .map(Map.Entry::getKey).sorted().toList();
        assertFalse(held.isEmpty(), "replica 2 holds none of the jobs: " + receiver.of(topic));
        return held;
    }

    /** Cancels each job through {@code via}: 202, in flight and cancelling. */
    private static void cancel(AppProcess via, String topic, List<String> ids) {
        for (String id : ids) {
            var reply = via.send("DELETE", "/jobs/" + topic + "/" + id, null);
            assertEquals(202, reply.statusCode(), id + ": " + reply.body());
        }
    }

    /**
     * The cancelled jobs leave Redis without a dead entry, and are never started again (looked at
     * for two leases more, past the reclaim that removed them); the others end as usual.
     */
    private static void assertRemovedNotRerun(int redisPort, AppProcess survivor, Receiver receiver, String topic,
            List<String> cancelled, CompletableFuture<Void> released) {
        String k = Topics.keys(topic);
        Awaitility.await("the cancelled jobs removed by the reclaim").atMost(Duration.ofSeconds(40)).ignoreExceptions()
                .until(() -> {
                    try (Resp r = new Resp(redisPort)) {
                        return cancelled.stream().allMatch(id -> r.str("HGET", k + "jobs", id) == null);
                    }
                });
        released.complete(null);
        Awaitility.await("the topic empty").atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> {
            try (Resp r = new Resp(redisPort)) {
                return Faults.topicEmpty(r, topic);
            }
        });
        Awaitility.await("no cancelled job started again").during(Duration.ofMillis(2 * Faults.LEASE_MS))
                .atMost(Duration.ofMillis(2 * Faults.LEASE_MS + 10_000))
                .until(() -> cancelled.stream().allMatch(id -> receiver.starts(topic, id) == 1));
        try (Resp r = new Resp(redisPort)) {
            assertEquals(0L, r.num("ZCARD", k + "dead"), "no dead entry: " + Faults.topicState(r, topic));
        }
        for (String id : cancelled) {
            assertEquals(404, survivor.status("/jobs/" + topic + "/" + id), id);
        }
        System.out.printf("cancelled %s: removed by the reclaim, started once each; %s%n", cancelled,
                receiver.tally(topic));
    }

    @Test
    void aHolderKilledBetweenTheCancelAndItsDeliveryNeverRunsTheJobAgain() throws Exception {
        String topic = Topics.fresh("cancel-killed");
        CompletableFuture<Void> released = new CompletableFuture<>();
        try (RedisProcess redis = RedisProcess.startEphemeral(); Receiver receiver = new Receiver()) {
            List<AppProcess> replicas = Faults.startAll(2,
                    i -> AppProcess.start("cancel-killed-r" + i, redis.port(), settings(topic, receiver, i)));
            try {
                AppProcess survivor = replicas.get(0);
                AppProcess holder = replicas.get(1);
                List<String> held = runningOn2(survivor, receiver, topic, released);
                // Frozen: the wake-up message reaches its socket, never the replica; then killed.
                holder.freeze();
                cancel(survivor, topic, held);
                holder.kill();
                assertRemovedNotRerun(redis.port(), survivor, receiver, topic, held, released);
            } finally {
                released.complete(null);
                replicas.forEach(AppProcess::close);
            }
        }
    }

    @Test
    void aHolderCutOffWhenItsJobIsCancelledNeverRunsItAgain() throws Exception {
        String topic = Topics.fresh("cancel-cut");
        CompletableFuture<Void> released = new CompletableFuture<>();
        try (NetNs ns = NetNs.create(); RedisProcess redis = RedisProcess.startEphemeral();
                Receiver receiver = new Receiver(ns.hostAddress())) {
            try (Resp r = new Resp(redis.port())) {
                // The replica inside reaches Redis at the host end of the pair.
                r.call("CONFIG", "SET", "bind", "127.0.0.1 " + ns.hostAddress());
                r.call("CONFIG", "SET", "protected-mode", "no");
            }
            List<AppProcess> replicas = Faults.startAll(2, i -> i == 1
                    ? AppProcess.start("cancel-cut-r1", redis.port(), settings(topic, receiver, i))
                    : AppProcess.startIn(ns, "cancel-cut-r2", Map.of("quarkus.redis.hosts", "redis://" + ns.hostAddress()
                            + ":" + redis.port()), settings(topic, receiver, i)));
            try {
                AppProcess survivor = replicas.get(0);
                List<String> held = runningOn2(survivor, receiver, topic, released);
                ns.cut();
                try {
                    cancel(survivor, topic, held);
                    // Cut off for two leases: the reclaim on the other side removes its jobs meanwhile.
                    Awaitility.await("the cut-off replica's cancelled jobs removed").atMost(Duration.ofSeconds(40))
                            .ignoreExceptions().until(() -> {
                                try (Resp r = new Resp(redis.port())) {
                                    return held.stream().allMatch(
                                            id -> r.str("HGET", Topics.keys(topic) + "jobs", id) == null);
                                }
                            });
                } finally {
                    ns.heal();
                }
                assertRemovedNotRerun(redis.port(), survivor, receiver, topic, held, released);
            } finally {
                released.complete(null);
                replicas.forEach(AppProcess::close);
            }
        }
    }
}
