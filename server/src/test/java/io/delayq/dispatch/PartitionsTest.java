package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobInfo;
import io.delayq.core.Jobs;
import io.delayq.core.NewJob;
import io.delayq.store.Inspection;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(PartitionsTest.TwoPartitions.class)
class PartitionsTest {
    public static class TwoPartitions implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            // a small shared worker pool: the two partitions' takers compete for its slots; a store
            // of its own (the other tests' store was written with one partition)
            return Map.of("delayq.partitions", "2", "delayq.topics.rec.concurrency", "4", "delayq.prefix", "dq2p");
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    Inspection store;

    @Test
    void jobsOfBothPartitionsAreRunOnceEachWhenTheirTakersShareFourWorkerSlots() {
        String prefix = Topics.fresh("parts").replace('-', '_');
        List<NewJob> batch = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            batch.add(new NewJob("rec", prefix + "_" + i, true, 100, 0, null));
        }
        Set<Integer> partitions = new HashSet<>();
        batch.forEach(j -> partitions.add(store.partitionOf("rec", j.id()).index()));
        assertEquals(Set.of(0, 1), partitions, "the ids spread over both partitions");
        List<JobInfo> infos = jobs.scheduleAll(batch);
        Awaitility.await().atMost(Duration.ofSeconds(20))
                .until(() -> infos.stream().allMatch(i -> store.get("rec", i.id()).isEmpty()));
        for (JobInfo info : infos) {
            assertEquals(1, TestObservers.RECORDED.get(info.id()).size(), info.id() + " delivered once");
        }
    }
}
