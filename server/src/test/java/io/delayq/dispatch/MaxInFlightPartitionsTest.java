package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.InvalidJobException;
import io.delayq.core.NewJob;
import io.delayq.core.TopicControl;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.store.TakeResult;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.TestProfile;
import io.quarkus.test.junit.QuarkusTest;

/**
 * The concurrency cap divided over partitions (delayq.partitions 2, PartitionsTest's profile):
 * partition i runs floor(N / P), plus one when i &lt; N mod P; a cap below P is refused.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(PartitionsTest.TwoPartitions.class)
class MaxInFlightPartitionsTest {
    @Inject
    JobQueue store;
    @Inject
    TopicControl control;

    @Test
    void eachPartitionTakesItsShareAndTheSharesSumToTheCap() {
        String topic = Topics.fresh("cap-parts");
        Map<Partition, List<NewJob>> byPartition = new java.util.HashMap<>();
        for (int i = 0; i < 40; i++) {
            NewJob job = new NewJob(topic, "p" + i, true, 0, 0, null);
            byPartition.computeIfAbsent(store.partitionOf(topic, job.id()), k -> new ArrayList<>()).add(job);
        }
        assertEquals(2, byPartition.size(), "ids in both partitions");
        byPartition.forEach((p, jobs) -> store.enqueue(p, jobs, ""));
        assertEquals(3, control.setMaxInFlight(topic, 3).maxInFlight().max());
        List<Partition> ps = store.partitionsOf(topic);
        Set<Integer> older = new HashSet<>();
        TakeResult first = store.take(ps.get(0), 10, 30_000, "A:", older, List.of(), 0);
        TakeResult second = store.take(ps.get(1), 10, 30_000, "B:", new HashSet<>(), List.of(), 0);
        assertEquals(2, first.jobs().size(), "partition 0: floor(3 / 2) + 1 (0 < 3 mod 2)");
        assertEquals(1, second.jobs().size(), "partition 1: floor(3 / 2)");
        assertTrue(first.capped() && second.capped());
        assertEquals(3, control.flow(topic).maxInFlight().inflight(), "summed over the partitions");

        InvalidJobException e = assertThrows(InvalidJobException.class, () -> control.setMaxInFlight(topic, 1));
        assertEquals("max", e.field());
        assertTrue(e.getMessage().contains("delayq.partitions is 2"), e.getMessage());
        assertEquals(3, control.flow(topic).maxInFlight().max(), "a refused cap changes nothing");
    }
}
