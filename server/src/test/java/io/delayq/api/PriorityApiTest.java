package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.InvalidJobException;
import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.core.ReactiveJobs;
import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;

/**
 * A job's {@code priority} at enqueue over REST and Java: the rule and its 400s (nothing written),
 * what GET and the listing show, batch items, replace keeping or changing it. On topics no
 * replica serves; the order itself is PriorityScriptsTest's (runtime).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class PriorityApiTest {
    @Inject
    Jobs jobs;
    @Inject
    ReactiveJobs reactive;

    private static Response post(String path, String body) {
        return JobRetryApiTest.post(path, body);
    }

    private static String job(String topic, String id, String priority) {
        return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"delayMs\":3600000"
                + (priority == null ? "" : ",\"priority\":" + priority) + "}";
    }

    @Test
    void aPriorityOutsideOneToFiveOrNotAnIntegerIsA400NamingItAndNothingIsWritten() {
        String t = Topics.fresh("prio-bad");
        for (String bad : List.of("0", "6", "-1", "\"x\"", "\"2\"", "2.5", "true", "99999999999")) {
            post("/jobs", job(t, "j", bad)).then().statusCode(400).contentType(startsWith("application/problem+json"))
                    .body("field", equalTo("priority")).body("detail", notNullValue());
        }
        post("/jobs/batch", "[" + job(t, "a", "1") + "," + job(t, "b", "6") + "]").then().statusCode(400)
                .contentType(startsWith("application/problem+json")).body("field", equalTo("jobs[1].priority"));
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + t + "*"), "nothing written");
        }
        InvalidJobException e = assertThrows(InvalidJobException.class,
                () -> jobs.schedule(JobRequest.topic(t).id("j").priority(0)));
        assertEquals("priority", e.field());
        e = assertThrows(InvalidJobException.class,
                () -> reactive.schedule(JobRequest.topic(t).id("j").priority(6)).await().indefinitely());
        assertEquals("priority", e.field());
    }

    @Test
    void getTheListingAndBatchItemsShowIt() {
        String t = Topics.fresh("prio-get");
        post("/jobs", job(t, "one", "1")).then().statusCode(201);
        post("/jobs", job(t, "plain", null)).then().statusCode(201);
        post("/jobs/batch", "[" + job(t, "b5", "5") + "," + job(t, "b2", "2") + "]").then().statusCode(200);
        jobs.schedule(JobRequest.topic(t).id("java4").delay(Duration.ofHours(1)).priority(4));
        reactive.schedule(JobRequest.topic(t).id("rx2").delay(Duration.ofHours(1)).priority(2)).await().indefinitely();
        given().get("/jobs/" + t + "/one").then().statusCode(200).body("priority", equalTo(1));
        given().get("/jobs/" + t + "/plain").then().statusCode(200).body("priority", equalTo(3));
        given().get("/jobs/" + t + "/b5").then().statusCode(200).body("priority", equalTo(5));
        given().get("/jobs/" + t + "/b2").then().statusCode(200).body("priority", equalTo(2));
        assertEquals(4, jobs.get(t, "java4").orElseThrow().priority());
        assertEquals(2, jobs.get(t, "rx2").orElseThrow().priority());
        given().get("/topics/" + t + "/jobs?limit=100").then().statusCode(200).body("jobs.size()", equalTo(6))
                .body("jobs.find { it.id == 'one' }.priority", equalTo(1))
                .body("jobs.find { it.id == 'plain' }.priority", equalTo(3))
                .body("jobs.find { it.id == 'b5' }.priority", equalTo(5));
    }

    @Test
    void aReplaceWithoutAPriorityKeepsItAndOneWithAPriorityChangesIt() {
        String t = Topics.fresh("prio-replace");
        post("/jobs", job(t, "j", "1")).then().statusCode(201);
        post("/jobs", "{\"topic\":\"" + t + "\",\"id\":\"j\",\"delayMs\":7200000,\"ifExists\":\"replace\"}")
                .then().statusCode(200);
        given().get("/jobs/" + t + "/j").then().statusCode(200).body("priority", equalTo(1));
        post("/jobs", "{\"topic\":\"" + t + "\",\"id\":\"j\",\"delayMs\":7200000,\"ifExists\":\"extend\",\"priority\":4}")
                .then().statusCode(200);
        given().get("/jobs/" + t + "/j").then().statusCode(200).body("priority", equalTo(4));
        jobs.schedule(JobRequest.topic(t).id("j").delay(Duration.ofHours(3)).ifExists(IfExists.REPLACE));
        assertEquals(4, jobs.get(t, "j").orElseThrow().priority());
    }
}
