package io.delayq.dispatch;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.startsWith;
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

    /** An id is one job per topic over its partitions (issue 32): another group, or none, is a 409 naming group. */
    @Test
    void anIdEnqueuedAgainWithAnotherGroupIsA409NamingGroup_andABatchWithOneWritesNothing() {
        String topic = Topics.fresh("parts-id");
        String g0 = group(topic, 0), g1 = group(topic, 1);
        String id = "once";
        String job = "{\"topic\":\"" + topic + "\",\"id\":\"%s\",\"delayMs\":3600000%s}";
        post("/jobs", job.formatted(id, ",\"group\":\"" + g0 + "\"")).then().statusCode(201);
        post("/jobs", job.formatted(id, ",\"group\":\"" + g0 + "\"")).then().statusCode(200);
        post("/jobs", job.formatted(id, ",\"group\":\"" + g1 + "\"")).then().statusCode(409)
                .contentType(startsWith("application/problem+json")).body("field", equalTo("group"))
                .body("id", equalTo(id)).body("detail", containsString("group " + g0));
        // With no group: refused unless the id's own partition is g0's (then it is the same job).
        if (store.partitionOf(topic, id).index() != 0) {
            post("/jobs", job.formatted(id, "")).then().statusCode(409).body("field", equalTo("group"));
        }
        // A batch over both partitions with one such item: 409 naming the item, nothing written.
        String fresh = "fresh-" + topic;
        post("/jobs/batch", "[" + job.formatted(fresh, ",\"group\":\"" + g1 + "\"") + ","
                + job.formatted(id, ",\"group\":\"" + g1 + "\"") + "]").then().statusCode(409)
                .body("field", equalTo("jobs[1].group"));
        given().get("/jobs/" + topic + "/" + fresh).then().statusCode(404);
        given().get("/jobs/" + topic + "/" + id).then().statusCode(200).body("group", equalTo(g0));
    }

    /** A group name whose partition is {@code index}. */
    private String group(String topic, int index) {
        for (int i = 0;; i++) {
            if (store.partitionOf(topic, "x", "g" + i).index() == index) {
                return "g" + i;
            }
        }
    }

    private static io.restassured.response.Response post(String path, String body) {
        return given().contentType(io.restassured.http.ContentType.JSON).body(body).post(path);
    }
}
