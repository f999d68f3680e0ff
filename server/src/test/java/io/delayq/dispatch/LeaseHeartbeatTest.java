package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.Job;
import io.delayq.core.JobRequest;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.delayq.dev.Resp;
import io.delayq.store.JobQueue;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.store.TakenJob;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

/**
 * After a lost lease a replica can hold two leases of one job id: the stale attempt, still
 * running, and the attempt it took again. The heartbeat must extend the current lease whatever
 * order it meets the two in. It used to key leases by job id, keeping the last one met: when that
 * was the stale one, the current lease was never extended and the job ran again and again.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class LeaseHeartbeatTest {
    static final String SERVED = "heartbeat-served";

    /** Gives this replica a worker pool that nothing else uses (the test never enqueues to {@link #SERVED}). */
    @ApplicationScoped
    public static class Served {
        void run(@Observes @JobTopic(SERVED) Job job) {
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    JobQueue store;
    @Inject
    Dispatcher dispatcher;
    @Inject
    LeaseHeartbeat heartbeat;

    @Test
    void theHeartbeatExtendsTheCurrentLeaseOfAJobWhenItAlsoHoldsAStaleLeaseOfIt() {
        // The leases are made by the test, with tokens it chooses, on a topic no replica takes
        // from; they are handed to a served topic's pool as if its taker had taken them.
        String topic = Topics.fresh("two-leases");
        Partition p = store.partitionsOf(topic).get(0);
        String[] prefixes = staleIteratedLast("j");
        jobs.schedule(JobRequest.topic(topic).id("j").delay(Duration.ZERO));
        Lease stale = store.take(p, 1, 5_000, prefixes[0], new HashSet<>(), List.of(), 0).jobs().get(0).lease();
        assertEquals(1, store.requeue(p, List.of(stale)), "the first lease is lost, the job due again");
        TakenJob current = store.take(p, 1, 5_000, prefixes[1], new HashSet<>(), List.of(), 0).jobs().get(0);

        // The heartbeat extends each job in its own partition, whichever pool runs it.
        Map<Lease, TakenJob> running = runningOf(SERVED);
        running.put(current.lease(), current);
        running.put(stale, new TakenJob(p, stale, current.record()));
        try (Resp redis = RedisTestResource.resp()) {
            List<Lease> order = new ArrayList<>();
            running.values().forEach(t -> order.add(t.lease()));
            assertEquals(List.of(current.lease(), stale), order, "set-up: the stale lease is met last");
            String inflight = Topics.keys(topic) + "inflight";
            double before = Double.parseDouble(redis.str("ZSCORE", inflight, "j"));

            Internals.call(heartbeat, "beat");

            double after = Double.parseDouble(redis.str("ZSCORE", inflight, "j"));
            // The lease of this replica (30 s by default) replaces the test's 5 s one.
            assertTrue(after >= before + 20_000, "the current lease was extended: deadline " + before + " -> " + after);
            assertEquals(current.lease().token(), redis.str("HGET", Topics.keys(topic) + "leases", "j"));
        } finally {
            running.remove(stale);
            running.remove(current.lease());
            store.ack(p, List.of(current.lease()));
        }
    }

    /** The running jobs of a topic's worker pool (package-private types: reflection). */
    @SuppressWarnings("unchecked")
    private Map<Lease, TakenJob> runningOf(String topic) {
        Object pool = ((Map<String, Object>) Internals.field(dispatcher, "pools")).get(topic);
        return (Map<Lease, TakenJob>) Internals.call(pool, "running");
    }

    /**
     * Token prefixes for a stale and a current lease of {@code id} such that the map of a pool that
     * never ran a job (a {@link ConcurrentHashMap} of default size) meets the stale one last: the
     * one a heartbeat keyed by id would have kept.
     */
    private static String[] staleIteratedLast(String id) {
        for (int i = 0;; i++) {
            String stale = "S" + i + ":";
            String current = "C" + i + ":";
            Map<Lease, Boolean> probe = new ConcurrentHashMap<>();
            probe.put(new Lease(id, current + 1), true);
            probe.put(new Lease(id, stale + 1), false);
            if (probe.keySet().iterator().next().token().startsWith("C")) {
                return new String[] { stale, current };
            }
        }
    }
}
