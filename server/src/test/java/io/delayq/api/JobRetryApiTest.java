package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.InvalidJobException;
import io.delayq.core.JobRequest;
import io.delayq.core.JobRetry;
import io.delayq.core.Jobs;
import io.delayq.core.ReactiveJobs;
import io.delayq.dev.Resp;
import io.delayq.store.JobRecord;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;

/**
 * A job's own retry backoff ({@code "retry": {"initialMs", "maxMs"}}) at enqueue over REST and
 * Java: the rules and their 400s, what GET shows, replace and extend, reschedule, and records
 * written before it. On topics no replica serves; the backoff itself is JobRetryDispatchTest's.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class JobRetryApiTest {
    @Inject
    Jobs jobs;
    @Inject
    ReactiveJobs reactive;

    static Response post(String path, String body) {
        return given().contentType(ContentType.JSON).body(body).post(path);
    }

    private static String job(String topic, String id, String retry, String ifExists) {
        return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"delayMs\":3600000"
                + (retry == null ? "" : ",\"retry\":" + retry)
                + (ifExists == null ? "" : ",\"ifExists\":\"" + ifExists + "\"") + "}";
    }

    @Test
    void everyBadRetryIsA400NamingItsFieldAndNothingIsWritten() {
        String t = Topics.fresh("retry-bad");
        String[][] cases = {
                // retry, field
                { "{\"initialMs\":0}", "retry.initialMs" },
                { "{\"initialMs\":-5}", "retry.initialMs" },
                { "{\"initialMs\":1.5}", "retry.initialMs" },
                { "{\"initialMs\":\"200\"}", "retry.initialMs" },
                { "{\"initialMs\":31536000001}", "retry.initialMs" },
                { "{\"maxMs\":0}", "retry.maxMs" },
                { "{\"maxMs\":true}", "retry.maxMs" },
                { "{\"maxMs\":99999999999999999999}", "retry.maxMs" },
                { "{\"maxMs\":31536000001}", "retry.maxMs" },
                { "{\"initialMs\":500,\"maxMs\":400}", "retry.initialMs" },
                { "{\"initialMs\":200,\"multiplier\":3}", "retry.multiplier" },
                { "200", "retry" },
                { "[200,400]", "retry" },
        };
        for (String[] c : cases) {
            post("/jobs", job(t, "j", c[0], null)).then().statusCode(400)
                    .contentType(startsWith("application/problem+json"))
                    .body("field", equalTo(c[1])).body("detail", notNullValue());
        }
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + t + "*"));
            assertEquals(0L, redis.num("SISMEMBER", "dq:topics", t));
        }
    }

    @Test
    void aBatchWithOneBadRetryIsRejectedWholeNamingTheItemAndWritesNothing() {
        String t = Topics.fresh("retry-batch");
        String body = "[" + job(t, "a", "{\"initialMs\":200,\"maxMs\":400}", null) + ","
                + job(t, "b", "{\"initialMs\":200,\"maxMs\":100}", null) + "," + job(t, "c", null, null) + "]";
        post("/jobs/batch", body).then().statusCode(400).contentType(startsWith("application/problem+json"))
                .body("field", equalTo("jobs[1].retry.initialMs"));
        post("/jobs/batch", "{\"jobs\":[" + job(t, "a", null, null) + "," + job(t, "b", "{\"maxMs\":0}", null) + "]}")
                .then().statusCode(400).body("field", equalTo("jobs[1].retry.maxMs"));
        post("/jobs/batch", "[" + job(t, "a", "{\"initial\":1}", null) + "]").then().statusCode(400)
                .body("field", equalTo("jobs[0].retry.initial"));
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + t + "*"), "no partial write");
        }
        // and a good batch keeps each item's own
        post("/jobs/batch", "[" + job(t, "a", "{\"initialMs\":200,\"maxMs\":400}", null) + ","
                + job(t, "b", "{\"maxMs\":9000}", null) + "," + job(t, "c", null, null) + "]").then().statusCode(200);
        given().get("/jobs/" + t + "/a").then().statusCode(200).body("retry.initialMs", equalTo(200))
                .body("retry.maxMs", equalTo(400));
        given().get("/jobs/" + t + "/b").then().statusCode(200).body("retry.initialMs", nullValue())
                .body("retry.maxMs", equalTo(9000));
        given().get("/jobs/" + t + "/c").then().statusCode(200).body("retry", nullValue());
    }

    @Test
    void getShowsTheRetryAsGivenAndTheRecordKeepsIt() {
        String t = Topics.fresh("retry-get");
        post("/jobs", job(t, "both", "{\"initialMs\":200,\"maxMs\":400}", null)).then().statusCode(201);
        post("/jobs", job(t, "initial", "{\"initialMs\":250}", null)).then().statusCode(201);
        post("/jobs", job(t, "none", null, null)).then().statusCode(201);
        post("/jobs", job(t, "empty", "{}", null)).then().statusCode(201);
        post("/jobs", job(t, "nulls", "null", null)).then().statusCode(201);
        given().get("/jobs/" + t + "/both").then().statusCode(200).body("retry.initialMs", equalTo(200))
                .body("retry.maxMs", equalTo(400));
        given().get("/jobs/" + t + "/initial").then().statusCode(200).body("retry.initialMs", equalTo(250))
                .body("retry.maxMs", nullValue());
        for (String id : List.of("none", "empty", "nulls")) {
            given().get("/jobs/" + t + "/" + id).then().statusCode(200).body("retry", nullValue());
        }
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(t);
            assertEquals(new JobRetry(200L, 400L), JobRecord.decode(redis.str("HGET", k + "jobs", "both")).retry());
            String none = redis.str("HGET", k + "jobs", "none");
            assertTrue(none.indexOf('\u001d') < 0 && none.indexOf(',') < 0, "no override costs nothing: " + none);
        }
    }

    @Test
    void javaAndReactiveRequestsSetItAndBreakTheSameRules() {
        String t = Topics.fresh("retry-java");
        jobs.schedule(JobRequest.topic(t).id("j").delay(Duration.ofHours(1))
                .retry(Duration.ofMillis(200), Duration.ofMillis(400)));
        assertEquals(new JobRetry(200L, 400L), jobs.get(t, "j").orElseThrow().retry());
        reactive.schedule(JobRequest.topic(t).id("r").delay(Duration.ofHours(1)).retry(null, Duration.ofSeconds(3)))
                .await().indefinitely();
        assertEquals(new JobRetry(null, 3000L), jobs.get(t, "r").orElseThrow().retry());

        InvalidJobException e = assertThrows(InvalidJobException.class, () -> jobs.schedule(JobRequest.topic(t).id("x")
                .retry(Duration.ofSeconds(5), Duration.ofSeconds(1))));
        assertEquals("retry.initialMs", e.field());
        e = assertThrows(InvalidJobException.class,
                () -> jobs.schedule(JobRequest.topic(t).id("x").retry(Duration.ZERO, null)));
        assertEquals("retry.initialMs", e.field());
        e = assertThrows(InvalidJobException.class,
                () -> jobs.schedule(JobRequest.topic(t).id("x").retry(null, Duration.ofDays(366))));
        assertEquals("retry.maxMs", e.field());
        e = assertThrows(InvalidJobException.class, () -> reactive.scheduleAll(List.of(JobRequest.topic(t).id("y"),
                JobRequest.topic(t).id("x").retry(Duration.ofMillis(-1), null))).await().indefinitely());
        assertEquals("requests[1].retry.initialMs", e.field());
        assertTrue(jobs.get(t, "x").isEmpty() && jobs.get(t, "y").isEmpty(), "nothing written");
    }

    @Test
    void replaceAndExtendTakeTheNewRetryAndKeepTakesNone() {
        String t = Topics.fresh("retry-ifx");
        post("/jobs", job(t, "j", "{\"initialMs\":200,\"maxMs\":400}", null)).then().statusCode(201);
        post("/jobs", job(t, "j", "{\"initialMs\":1000}", "keep")).then().statusCode(200);
        given().get("/jobs/" + t + "/j").then().body("retry.initialMs", equalTo(200)).body("retry.maxMs", equalTo(400));
        post("/jobs", job(t, "j", "{\"initialMs\":300,\"maxMs\":900}", "replace")).then().statusCode(200)
                .body("replaced", equalTo(true));
        given().get("/jobs/" + t + "/j").then().body("retry.initialMs", equalTo(300)).body("retry.maxMs", equalTo(900));
        post("/jobs", job(t, "j", "{\"maxMs\":5000}", "extend")).then().statusCode(200).body("replaced", equalTo(true));
        given().get("/jobs/" + t + "/j").then().body("retry.initialMs", nullValue()).body("retry.maxMs", equalTo(5000));
        // as maxAttempts: a replace without retry leaves the job to its topic's backoff
        post("/jobs", job(t, "j", null, "replace")).then().statusCode(200).body("replaced", equalTo(true));
        given().get("/jobs/" + t + "/j").then().body("retry", nullValue());
        // from Java, in one batch script with the other modes
        jobs.schedule(JobRequest.topic(t).id("j").delay(Duration.ofHours(2)).ifExists(IfExists.REPLACE)
                .retry(Duration.ofMillis(50), Duration.ofMillis(60)));
        assertEquals(new JobRetry(50L, 60L), jobs.get(t, "j").orElseThrow().retry());
    }

    @Test
    void theOpenApiDocumentDescribesRetryInTheEnqueueAndInTheJob() {
        given().accept("application/json").get("/q/openapi").then().statusCode(200)
                .body("components.schemas.NewJob.properties.retry.properties.initialMs.minimum", equalTo(1))
                .body("components.schemas.NewJob.properties.retry.properties.maxMs.format", equalTo("int64"))
                .body("components.schemas.NewJob.properties.retry.additionalProperties", equalTo(false))
                .body("components.schemas.JobInfo.properties.retry", notNullValue());
    }

    @Test
    void aRescheduleKeepsTheRetry() {
        String t = Topics.fresh("retry-patch");
        post("/jobs", job(t, "j", "{\"initialMs\":200,\"maxMs\":400}", null)).then().statusCode(201);
        given().contentType(ContentType.JSON).body("{\"delayMs\":7200000}").patch("/jobs/" + t + "/j").then()
                .statusCode(200);
        given().get("/jobs/" + t + "/j").then().body("retry.initialMs", equalTo(200)).body("retry.maxMs", equalTo(400));
    }

    @Test
    void aRecordWrittenBeforeTheOverrideReadsAndReschedulesAsFollowingItsTopic() {
        String t = Topics.fresh("retry-old");
        jobs.schedule(JobRequest.topic(t).id("old").delay(Duration.ofHours(1)));
        String trace = "0af7651916cd43dd8448eb211c80319c" + "b7ad6b7169203331" + "01";
        try (Resp redis = RedisTestResource.resp()) {
            String k = Topics.keys(t);
            JobRecord now = JobRecord.decode(redis.str("HGET", k + "jobs", "old"));
            // as the previous release wrote it: 2 attempts, max 5, traced, 1 lost attempt, an error with commas
            String old = Long.toString(now.runAt(), 36) + ",2,5,\u001e" + trace + "\u001f1\u001fboom, again\n{\"a\":1}";
            redis.call("HSET", k + "jobs", "old", old);
            given().get("/jobs/" + t + "/old").then().statusCode(200).body("retry", nullValue())
                    .body("attempts", equalTo(2)).body("maxAttempts", equalTo(5)).body("lostAttempts", equalTo(1))
                    .body("lastError", equalTo("boom, again"));
            given().contentType(ContentType.JSON).body("{\"delayMs\":7200000}").patch("/jobs/" + t + "/old").then()
                    .statusCode(200);
            JobRecord after = JobRecord.decode(redis.str("HGET", k + "jobs", "old"));
            assertNull(after.retry());
            assertEquals(trace, after.trace());
            assertEquals("boom, again", after.lastError());
            assertEquals(1, after.lostAttempts());
        }
    }

    /** A job's own limits ({@code timeoutMs}, {@code expiresAt}) ride the same way: the rules, their 400s, GET. */
    @Test
    void everyBadLimitIsA400NamingItsFieldAndABatchWritesNothing() {
        String t = Topics.fresh("limits-bad");
        String soon = java.time.Instant.now().plusSeconds(60).toString();
        String[][] cases = {
                // extra fields, field
                { "\"timeoutMs\":0", "timeoutMs" },
                { "\"timeoutMs\":-5", "timeoutMs" },
                { "\"timeoutMs\":1.5", "timeoutMs" },
                { "\"timeoutMs\":\"100\"", "timeoutMs" },
                { "\"timeoutMs\":86400001", "timeoutMs" },
                { "\"timeoutMs\":99999999999999999999", "timeoutMs" },
                { "\"expiresAt\":\"tomorrow\"", "expiresAt" },
                { "\"expiresAt\":5", "expiresAt" },
                // runAt is an hour away: a minute from now is before it
                { "\"expiresAt\":\"" + soon + "\"", "expiresAt" },
        };
        for (String[] c : cases) {
            post("/jobs", "{\"topic\":\"" + t + "\",\"id\":\"j\",\"delayMs\":3600000," + c[0] + "}").then().statusCode(400)
                    .contentType(startsWith("application/problem+json"))
                    .body("field", equalTo(c[1])).body("detail", notNullValue());
        }
        post("/jobs/batch", "[{\"topic\":\"" + t + "\",\"id\":\"a\",\"timeoutMs\":500},{\"topic\":\"" + t
                + "\",\"id\":\"b\",\"expiresAt\":\"2001-01-01T00:00:00Z\"}]").then().statusCode(400)
                .body("field", equalTo("jobs[1].expiresAt"));
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + t + "*"), "no partial write");
        }
        InvalidJobException e = assertThrows(InvalidJobException.class,
                () -> jobs.schedule(JobRequest.topic(t).id("j").timeout(Duration.ofHours(25))));
        assertEquals("timeoutMs", e.field());
        e = assertThrows(InvalidJobException.class, () -> jobs.schedule(JobRequest.topic(t).id("j")
                .delay(Duration.ofHours(1)).expiresAt(java.time.Instant.now())));
        assertEquals("expiresAt", e.field());
    }

    @Test
    void getShowsTheLimitsAsGivenAndJavaSetsThem() {
        String t = Topics.fresh("limits-get");
        java.time.Instant expires = java.time.Instant.now().plus(Duration.ofHours(2)).truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
        post("/jobs", "{\"topic\":\"" + t + "\",\"id\":\"r\",\"delayMs\":3600000,\"timeoutMs\":2500,\"expiresAt\":\""
                + expires + "\"}").then().statusCode(201);
        Response got = given().get("/jobs/" + t + "/r");
        got.then().statusCode(200).body("timeoutMs", equalTo(2500));
        assertEquals(expires, java.time.Instant.parse(got.path("expiresAt")));
        post("/jobs", job(t, "plain", null, null)).then().statusCode(201);
        given().get("/jobs/" + t + "/plain").then().statusCode(200).body("timeoutMs", nullValue())
                .body("expiresAt", nullValue());
        jobs.schedule(JobRequest.topic(t).id("j").delay(Duration.ofHours(1)).timeout(Duration.ofSeconds(3))
                .expiresAt(expires));
        assertEquals(3000L, jobs.get(t, "j").orElseThrow().timeoutMs());
        assertEquals(expires, jobs.get(t, "j").orElseThrow().expiresAt());
    }
}
