package io.delayq.faults;

import java.util.List;

import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisProcess;
import io.delayq.support.AppProcess;
import io.delayq.support.Receiver;

/**
 * A replica frozen (SIGSTOP: a long GC pause, a VM stall; its sockets stay open) for three
 * leases while it holds jobs, then thawed: see {@link ReplicaLoss} for what must hold.
 */
class FrozenReplicaIT {
    @Test
    void aReplicaFrozenForThreeLeasesHasItsJobsRunElsewhereOnceAndWhenThawedStartsNoneAgainAndTakesNewWork()
            throws Exception {
        ReplicaLoss scenario = new ReplicaLoss();
        try (RedisProcess redis = RedisProcess.startEphemeral(); Receiver receiver = new Receiver()) {
            List<AppProcess> replicas = Faults.startAll(3,
                    i -> AppProcess.start("frozen-r" + i, redis.port(), scenario.settings(i, receiver)));
            AppProcess victim = replicas.get(2);
            try {
                scenario.run(redis.port(), receiver, replicas, new ReplicaLoss.Fault("replica frozen (SIGSTOP)",
                        victim::freeze, victim::thaw));
            } finally {
                victim.thaw(); // a stopped JVM still dies of SIGKILL, but thawed it logs how it got there
                replicas.forEach(AppProcess::close);
            }
        }
    }
}
