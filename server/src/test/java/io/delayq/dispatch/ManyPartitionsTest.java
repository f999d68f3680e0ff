package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobInfo;
import io.delayq.core.Jobs;
import io.delayq.core.NewJob;
import io.delayq.store.Inspection;
import io.delayq.store.Partition;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * A replica serving thousands of partitions (every topic of the test application, 200 partitions
 * each) holds a fixed handful of threads for them, not one per partition, and still takes from
 * every partition: a job enqueued into each of a topic's 200 partitions is delivered, once.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(ManyPartitionsTest.TwoHundredPartitions.class)
class ManyPartitionsTest {
    static final int PARTITIONS = 200;

    public static class TwoHundredPartitions implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            // a store of its own: the other tests' store was written with one partition; the test
            // configuration's cap of 2 for "cap-config" is below 200 partitions, which fails the start
            // (a cap must give every partition a share): raised to one job per partition here
            return Map.of("delayq.partitions", Integer.toString(PARTITIONS), "delayq.prefix", "dq200p",
                    "delayq.topics.cap-config.max-in-flight", Integer.toString(PARTITIONS));
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    Inspection store;
    @Inject
    Dispatcher dispatcher;

    @Test
    void aReplicaServingThousandsOfPartitionsHoldsNoThreadPerPartitionAndTakesFromEach() {
        int served = dispatcher.partitions().size();
        assertTrue(served >= 5 * PARTITIONS, served + " partitions served");

        String prefix = Topics.fresh("many").replace('-', '_');
        List<NewJob> batch = new ArrayList<>();
        boolean[] covered = new boolean[PARTITIONS];
        int left = PARTITIONS;
        for (int i = 0; left > 0; i++) {
            String id = prefix + "_" + i;
            Partition p = store.partitionOf("rec", id);
            if (!covered[p.index()]) {
                covered[p.index()] = true;
                left--;
                batch.add(new NewJob("rec", id, true, 200, 0, null));
            }
        }
        List<JobInfo> infos = jobs.scheduleAll(batch);
        Awaitility.await().atMost(Duration.ofSeconds(30))
                .until(() -> infos.stream().allMatch(i -> TestObservers.RECORDED.containsKey(i.id())));
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> infos.stream().allMatch(i -> store.get("rec", i.id()).isEmpty()));
        for (JobInfo info : infos) {
            assertEquals(1, TestObservers.RECORDED.get(info.id()).size(), info.id() + " delivered once");
        }

        int delayqThreads = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            assertTrue(!t.getName().startsWith("delayq-taker-"), "a thread per partition: " + t.getName());
            if (t.getName().startsWith("delayq-") && !t.isVirtual()) {
                delayqThreads++;
            }
        }
        assertTrue(delayqThreads <= 8, delayqThreads + " delayq platform threads for " + served + " partitions");
        int live = ManagementFactory.getThreadMXBean().getThreadCount();
        assertTrue(live < 200, live + " live threads in the JVM for " + served + " partitions");
    }
}
