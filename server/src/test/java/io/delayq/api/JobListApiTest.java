package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasKey;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.path.json.JsonPath;

/**
 * {@code GET /topics/{t}/jobs}: pages of GET bodies in runAt order with a cursor that ends in null,
 * payloads only with fields=full, filters, and a 400 naming the parameter for every bad one (the
 * paging itself, over partitions and day shards, is JobListingTest's).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class JobListApiTest {
    @jakarta.inject.Inject
    io.delayq.store.RedisGateway redis;

    private static void enqueue(String topic, String id, long delayMs) {
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"delayMs\":"
                + delayMs + ",\"payload\":{\"n\":\"" + id + "\"}}").post("/jobs").then().statusCode(201);
    }

    @Test
    void pagesOfScheduledJobsInRunAtOrderEndWithANullCursor() {
        String t = Topics.fresh("list-api");
        for (int i = 0; i < 5; i++) {
            enqueue(t, "r-" + i, 3_600_000L + i * 1000);
        }
        enqueue(t, "other", 3_600_000L + 2500);
        List<String> ids = new ArrayList<>();
        String cursor = null;
        int pages = 0;
        do {
            JsonPath page = given().queryParam("idPrefix", "r-").queryParam("limit", 2)
                    .queryParams(cursor == null ? java.util.Map.of() : java.util.Map.of("cursor", cursor))
                    .get("/topics/" + t + "/jobs").then().statusCode(200).body("jobs[0].topic", equalTo(t))
                    .body("jobs[0].state", equalTo("scheduled")).body("jobs[0]", not(hasKey("payload")))
                    .body("$", hasKey("cursor")).extract().jsonPath();
            ids.addAll(page.getList("jobs.id"));
            cursor = page.getString("cursor");
            pages++;
        } while (cursor != null && pages < 10);
        assertEquals(List.of("r-0", "r-1", "r-2", "r-3", "r-4"), ids);

        given().get("/topics/" + t + "/jobs?fields=full&limit=100").then().statusCode(200)
                .body("jobs.size()", equalTo(6)).body("jobs[0].payload.n", equalTo("r-0"))
                .body("jobs[0].runAt", notNullValue()).body("jobs[0].attempts", equalTo(0))
                .body("cursor", nullValue());
        given().get("/topics/" + t + "/jobs?state=succeeded").then().statusCode(200).body("jobs.size()", equalTo(0))
                .body("cursor", nullValue());
        given().get("/topics/" + t + "/jobs?state=inflight").then().statusCode(200).body("jobs.size()", equalTo(0));
        given().get("/topics/" + t + "/jobs?state=dead").then().statusCode(200).body("jobs.size()", equalTo(0));
    }

    /**
     * Topic "results" keeps succeeded jobs (result-retention 10m; its observer, TestObservers#results,
     * sets a result): GET answers state succeeded with finishedAt and the result as JSON, an
     * oversize result is flagged resultDropped, and state=succeeded lists them newest first.
     */
    @Test
    void aSucceededJobOfATopicWithResultRetentionIsReadableAndListedWithItsResult() {
        String first = Topics.fresh("res-a"), second = Topics.fresh("res-b"), big = Topics.fresh("res-big");
        io.delayq.support.RedisNotFull.await(redis);
        // second has a priority: its kept success keeps it.
        for (String[] job : new String[][] { { first, "{\"echo\":\"one\"}", "" },
                { second, "{\"echo\":[1,2]}", ",\"priority\":2" }, { big, "{\"size\":70000}", "" } }) {
            given().contentType(ContentType.JSON).body("{\"topic\":\"results\",\"id\":\"" + job[0] + "\",\"payload\":"
                    + job[1] + job[2] + "}").post("/jobs").then().statusCode(201);
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(20)).until(() -> "succeeded".equals(
                    given().get("/jobs/results/" + job[0]).then().extract().jsonPath().getString("state")));
        }
        given().get("/jobs/results/" + first).then().statusCode(200).body("state", equalTo("succeeded"))
                .body("finishedAt", notNullValue()).body("attempts", equalTo(1)).body("result.echo", equalTo("one"))
                .body("result.attempt", equalTo(1)).body("$", not(hasKey("resultDropped")));
        given().get("/jobs/results/" + big).then().statusCode(200).body("state", equalTo("succeeded"))
                .body("resultDropped", equalTo(true)).body("$", not(hasKey("result")));
        JsonPath page = given().get("/topics/results/jobs?state=succeeded&limit=100&fields=full").then().statusCode(200)
                .extract().jsonPath();
        List<String> ids = page.getList("jobs.id");
        assertEquals(List.of(big, second, first), ids.stream().filter(id -> id.equals(first) || id.equals(second)
                || id.equals(big)).toList(), "newest first");
        int at = ids.indexOf(second);
        assertEquals(List.of(1, 2), page.getList("jobs[" + at + "].result.echo"));
        assertEquals(List.of(1, 2), page.getList("jobs[" + at + "].payload.echo"));
        assertEquals(2, page.getInt("jobs[" + at + "].priority"));
        given().get("/jobs/results/" + second).then().statusCode(200).body("priority", equalTo(2))
                .body("result.echo", equalTo(List.of(1, 2)));
        given().get("/jobs/results/" + first).then().statusCode(200).body("priority", equalTo(3));
        // The id is free again: a new job of it is scheduled, and GET shows that one.
        given().contentType(ContentType.JSON).body("{\"topic\":\"results\",\"id\":\"" + first
                + "\",\"delayMs\":3600000,\"payload\":{}}").post("/jobs").then().statusCode(201);
        given().get("/jobs/results/" + first).then().statusCode(200).body("state", equalTo("scheduled"))
                .body("$", not(hasKey("result")));
        // Cancelled, the new job takes the earlier one's kept success with it: never shown for a later job of the id.
        given().delete("/jobs/results/" + first).then().statusCode(204);
        given().get("/jobs/results/" + first).then().statusCode(404);
        // Without fields=full a listing carries no results (their flags only).
        given().get("/topics/results/jobs?state=succeeded&limit=1000").then().statusCode(200)
                .body("jobs.find { it.id == '" + second + "' }", not(hasKey("result")))
                .body("jobs.find { it.id == '" + big + "' }.resultDropped", equalTo(true));
    }

    @Test
    void aBadParameterIsA400NamingIt() {
        String t = Topics.fresh("list-bad");
        String[][] cases = {
                { "state=done", "state" }, { "limit=0", "limit" }, { "limit=1001", "limit" }, { "limit=x", "limit" },
                { "fields=full&limit=101", "limit" }, { "fields=some", "fields" }, { "idPrefix=a%20b", "idPrefix" },
                { "group=%2F", "group" }, { "from=yesterday", "from" }, { "to=2026-13-01T00:00:00Z", "to" },
                { "from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z", "to" }, { "cursor=bogus", "cursor" } };
        for (String[] c : cases) {
            given().get("/topics/" + t + "/jobs?" + c[0]).then().statusCode(400)
                    .contentType("application/problem+json").body("field", equalTo(c[1]));
        }
        given().get("/topics/Not_A_Topic/jobs").then().statusCode(400).body("field", equalTo("topic"));
        // A cursor of another state's listing.
        for (int i = 0; i < 3; i++) {
            enqueue(t, "c" + i, 3_600_000L + i);
        }
        String cursor = given().get("/topics/" + t + "/jobs?limit=1").then().statusCode(200).extract().path("cursor");
        given().queryParam("cursor", cursor).get("/topics/" + t + "/jobs?state=dead").then().statusCode(400)
                .body("field", equalTo("cursor"));
    }

    @Test
    void bulkCancelAndRescheduleActOnTheMatchingScheduledJobs() {
        String t = Topics.fresh("bulk-api");
        for (int i = 0; i < 6; i++) {
            enqueue(t, (i % 2 == 0 ? "t7-" : "t8-") + i, 3_600_000L + i * 1000);
        }
        given().contentType(ContentType.JSON).body("{\"idPrefix\":\"t7-\"}").post("/topics/" + t + "/jobs/cancel").then()
                .statusCode(200).body("cancelled", equalTo(3));
        given().get("/jobs/" + t + "/t7-0").then().statusCode(404);
        given().contentType(ContentType.JSON).body("{\"idPrefix\":\"t8-\",\"runAt\":\"2099-01-01T00:00:00Z\"}")
                .post("/topics/" + t + "/jobs/reschedule").then().statusCode(400).body("field", equalTo("runAt"));
        given().contentType(ContentType.JSON).body("{\"idPrefix\":\"t8-\",\"delayMs\":7200000}")
                .post("/topics/" + t + "/jobs/reschedule").then().statusCode(200).body("rescheduled", equalTo(3));
        long runAt = java.time.Instant.parse(given().get("/jobs/" + t + "/t8-1").then().statusCode(200).extract()
                .<String>path("runAt")).toEpochMilli();
        org.junit.jupiter.api.Assertions.assertTrue(runAt > System.currentTimeMillis() + 7_000_000);

        String[][] bad = { { "[]", "body" }, { "{\"id\":\"x\"}", "id" }, { "{\"idPrefix\":\"a b\"}", "idPrefix" },
                { "{\"group\":7}", "group" }, { "{\"from\":\"soon\"}", "from" },
                { "{\"from\":\"2026-12-02T00:00:00Z\",\"to\":\"2026-12-01T00:00:00Z\"}", "to" } };
        for (String[] c : bad) {
            given().contentType(ContentType.JSON).body(c[0]).post("/topics/" + t + "/jobs/cancel").then().statusCode(400)
                    .body("field", equalTo(c[1]));
        }
        given().contentType(ContentType.JSON).body("{\"idPrefix\":\"t8-\"}").post("/topics/" + t + "/jobs/reschedule")
                .then().statusCode(400).body("field", equalTo("delayMs"));
        given().contentType(ContentType.JSON).body("{\"delayMs\":-1}").post("/topics/" + t + "/jobs/reschedule")
                .then().statusCode(400).body("field", equalTo("delayMs"));
        given().contentType(ContentType.TEXT).body("x").post("/topics/" + t + "/jobs/cancel").then().statusCode(415);
        given().get("/topics/" + t + "/jobs").then().body("jobs.size()", equalTo(3));
    }

    @Test
    void theOpenApiDocumentDescribesTheListing() {
        given().accept("application/json").get("/q/openapi").then().statusCode(200)
                .body("paths.'/topics/{topic}/jobs'.get.operationId", equalTo("listJobs"))
                .body("paths.'/topics/{topic}/jobs'.get.responses.'400'", notNullValue())
                .body("components.schemas.JobPage.properties.cursor", notNullValue())
                .body("components.schemas.ListedJob.properties.payload", notNullValue())
                .body("components.schemas.ListedJob.properties.state", notNullValue())
                .body("paths.'/topics/{topic}/jobs/cancel'.post.operationId", equalTo("cancelJobs"))
                .body("paths.'/topics/{topic}/jobs/reschedule'.post.requestBody.content.'application/json'.schema.$ref",
                        equalTo("#/components/schemas/JobMove"));
    }
}
