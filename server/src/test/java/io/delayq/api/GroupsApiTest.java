package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.nullValue;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.InvalidJobException;
import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/**
 * A job's {@code group} at enqueue over REST and Java: its rules and their 400s (nothing written),
 * what GET shows, and a held job as GET shows it. On topics no replica serves, but for
 * {@code grp-12} ({@code group-max-in-flight=1} in the test configuration), which the test takes
 * from by hand; the limit itself is GroupScriptsTest's and GroupsIT's.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class GroupsApiTest {
    @Inject
    Jobs jobs;
    @Inject
    io.delayq.store.JobQueue store;

    private static io.restassured.response.Response post(String path, String body) {
        return given().contentType(ContentType.JSON).body(body).post(path);
    }

    @Test
    void aBadGroupIsA400NamingItAndNothingIsWritten() {
        String t = Topics.fresh("grp-bad");
        for (String group : new String[] { "\"has space\"", "\"\"", "\"..\"", "42", "{\"a\":1}",
                "\"" + "g".repeat(129) + "\"" }) {
            post("/jobs", "{\"topic\":\"" + t + "\",\"id\":\"j\",\"group\":" + group + "}").then().statusCode(400)
                    .contentType(startsWith("application/problem+json")).body("field", equalTo("group"));
        }
        post("/jobs/batch", "[{\"topic\":\"" + t + "\",\"id\":\"a\",\"group\":\"ok\"},{\"topic\":\"" + t
                + "\",\"id\":\"b\",\"group\":\"no way\"}]").then().statusCode(400).body("field", equalTo("jobs[1].group"));
        assertEquals("group", assertThrows(InvalidJobException.class,
                () -> jobs.schedule(JobRequest.topic(t).id("j").group("no way"))).field());
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + t + "*"), "no partial write");
        }
    }

    @Test
    void getShowsTheGroupAndAHeldJobAsHeld() {
        String t = "grp-12";
        post("/jobs", "{\"topic\":\"" + t + "\",\"id\":\"first\",\"group\":\"customer-7\"}").then().statusCode(201);
        jobs.schedule(JobRequest.topic(t).id("second").group("customer-7").delay(Duration.ZERO));
        given().get("/jobs/" + t + "/second").then().statusCode(200).body("group", equalTo("customer-7"))
                .body("state", equalTo("scheduled")).body("held", nullValue());
        // A take (as a replica's would be) runs the first and holds the second back: one at a time.
        io.delayq.store.Partition p = store.partitionsOf(t).get(0);
        assertEquals(1, store.take(p, 10, 30_000, "x:", new java.util.HashSet<>(), java.util.List.of(), 0).jobs().size());
        given().get("/jobs/" + t + "/second").then().statusCode(200).body("state", equalTo("scheduled"))
                .body("held", equalTo(true)).body("group", equalTo("customer-7"));
        given().get("/jobs/" + t + "/first").then().statusCode(200).body("state", equalTo("inflight"))
                .body("held", nullValue());
        given().get("/delayq/job?topic=" + t + "&id=second").then().statusCode(200)
                .body(org.hamcrest.Matchers.containsString("customer-7"))
                .body(org.hamcrest.Matchers.containsString("held back"));
        given().get("/delayq/topics/" + t).then().statusCode(200)
                .body(org.hamcrest.Matchers.containsString("Held by their group"));
    }
}
