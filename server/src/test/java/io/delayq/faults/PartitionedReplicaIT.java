package io.delayq.faults;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.NetNs;
import io.delayq.support.Receiver;

/**
 * A replica cut off from Redis and its HTTP target (its own network namespace, the veth pair
 * cut: its connections hang, nothing is reset) for three leases while it holds jobs, then healed:
 * see {@link ReplicaLoss} for what must hold.
 */
class PartitionedReplicaIT {
    @Test
    void aReplicaCutOffForThreeLeasesHasItsJobsRunElsewhereOnceAndWhenHealedStartsNoneAgainAndTakesNewWork()
            throws Exception {
        ReplicaLoss scenario = new ReplicaLoss();
        try (NetNs ns = NetNs.create(); RedisProcess redis = RedisProcess.startEphemeral();
                Receiver receiver = new Receiver(ns.hostAddress())) {
            try (Resp r = new Resp(redis.port())) {
                // The replica inside reaches Redis at the host end of the pair.
                r.call("CONFIG", "SET", "bind", "127.0.0.1 " + ns.hostAddress());
                r.call("CONFIG", "SET", "protected-mode", "no");
            }
            List<AppProcess> replicas = Faults.startAll(3, i -> i < 3
                    ? AppProcess.start("partitioned-r" + i, redis.port(), scenario.settings(i, receiver))
                    : AppProcess.startIn(ns, "partitioned-r3", Map.of("quarkus.redis.hosts", "redis://" + ns.hostAddress()
                            + ":" + redis.port()), scenario.settings(i, receiver)));
            try {
                scenario.run(redis.port(), receiver, replicas, new ReplicaLoss.Fault("replica cut off (veth pair cut)",
                        ns::cut, ns::heal));
            } finally {
                replicas.forEach(AppProcess::close);
            }
        }
    }
}
