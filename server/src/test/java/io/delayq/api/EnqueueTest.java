package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.delayq.support.RedisTestResource;
import io.delayq.dev.Resp;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;

@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class EnqueueTest {
    static Resp redis;

    @BeforeAll
    static void connect() {
        redis = RedisTestResource.resp();
    }

    @AfterAll
    static void disconnect() {
        redis.close();
    }

    static Response post(String path, String body) {
        return given().contentType(ContentType.JSON).body(body).post(path);
    }

    static String day(Instant t) {
        return t.atZone(java.time.ZoneOffset.UTC).toLocalDate().format(java.time.format.DateTimeFormatter.BASIC_ISO_DATE);
    }

    @Test
    void enqueuedJobLandsInTheShardOfItsRunAtDayAndIsListedInTheDayIndex() {
        String topic = Topics.fresh("shard");
        Instant runAt = Instant.now().plus(Duration.ofDays(3)).truncatedTo(ChronoUnit.MILLIS);
        post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"order-42\",\"payload\":{\"order\":42},\"runAt\":\"" + runAt + "\"}")
                .then().statusCode(201)
                .header("Location", org.hamcrest.Matchers.endsWith("/jobs/" + topic + "/order-42"))
                .body("id", equalTo("order-42")).body("state", equalTo("scheduled")).body("runAt", equalTo(runAt.toString()));

        String k = Topics.keys(topic);
        assertEquals(Long.toString(runAt.toEpochMilli()), redis.str("ZSCORE", k + "due:" + day(runAt), "order-42"));
        assertEquals(day(runAt), redis.str("ZSCORE", k + "days", day(runAt)));
        assertEquals(1L, redis.num("SISMEMBER", "dq:topics", topic));
        given().get("/jobs/" + topic + "/order-42").then().statusCode(200)
                .body("state", equalTo("scheduled")).body("attempts", equalTo(0)).body("runAt", equalTo(runAt.toString()));
    }

    @Test
    void jobsOfDifferentDaysLandInDifferentShardsAndAPastRunAtIsDueAtOnce() {
        String topic = Topics.fresh("days");
        Instant past = Instant.now().minus(Duration.ofDays(2)).truncatedTo(ChronoUnit.MILLIS);
        Instant later = Instant.now().plus(Duration.ofDays(1)).truncatedTo(ChronoUnit.MILLIS);
        post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"past\",\"runAt\":\"" + past + "\"}").then().statusCode(201);
        post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"later\",\"runAt\":\"" + later + "\"}").then().statusCode(201);
        String k = Topics.keys(topic);
        assertEquals(Long.toString(past.toEpochMilli()), redis.str("ZSCORE", k + "due:" + day(past), "past"));
        assertNull(redis.str("ZSCORE", k + "due:" + day(past), "later"));
        assertEquals(Long.toString(later.toEpochMilli()), redis.str("ZSCORE", k + "due:" + day(later), "later"));
        assertEquals(List.of(day(past), day(later)), redis.list("ZRANGE", k + "days", 0, -1));
        // due at once: the partition's earliest due time is the past runAt, before Redis now
        long next = Long.parseLong(redis.str("GET", k + "next"));
        long redisNow = Long.parseLong(redis.list("TIME").get(0).toString()) * 1000;
        assertEquals(past.toEpochMilli(), next);
        assertTrue(next < redisNow);
    }

    @Test
    void delayIsCountedFromRedisTime() {
        String topic = Topics.fresh("delay");
        long before = Long.parseLong(redis.list("TIME").get(0).toString()) * 1000;
        Response r = post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"d\",\"delayMs\":60000}");
        r.then().statusCode(201);
        long runAt = Instant.parse(r.jsonPath().getString("runAt")).toEpochMilli();
        assertTrue(runAt >= before + 60_000 && runAt < before + 62_000, "runAt " + runAt + " vs Redis now " + before);
    }

    @Test
    void sameIdTwiceKeepsOneJobAndRepliesWithTheOriginalRunAt() {
        String topic = Topics.fresh("idem");
        String first = post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"x\",\"delayMs\":60000}")
                .then().statusCode(201).extract().path("runAt");
        post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"x\",\"delayMs\":120000}")
                .then().statusCode(200).body("runAt", equalTo(first)).body("state", equalTo("scheduled"));
        String k = Topics.keys(topic);
        assertEquals(1L, redis.num("HLEN", k + "jobs"));
        assertEquals(1L, redis.num("ZCARD", k + "due:" + day(Instant.parse(first))));
    }

    @Test
    void hundredConcurrentEnqueuesOfOneIdMakeExactlyOneJob() throws Exception {
        String topic = Topics.fresh("race");
        ExecutorService pool = Executors.newFixedThreadPool(20);
        try {
            List<Callable<Response>> calls = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                int delay = 60_000 + i * 1000;
                calls.add(() -> post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"same\",\"delayMs\":" + delay + "}"));
            }
            int created = 0, existing = 0;
            Set<String> runAts = new HashSet<>();
            for (Future<Response> f : pool.invokeAll(calls)) {
                Response r = f.get();
                created += r.statusCode() == 201 ? 1 : 0;
                existing += r.statusCode() == 200 ? 1 : 0;
                runAts.add(r.jsonPath().getString("runAt"));
            }
            assertEquals(1, created);
            assertEquals(99, existing);
            assertEquals(1, runAts.size(), "every reply names the one job's runAt");
            String k = Topics.keys(topic);
            assertEquals(1L, redis.num("HLEN", k + "jobs"));
            long inShards = 0;
            for (Object d : redis.list("ZRANGE", k + "days", 0, -1)) {
                inShards += redis.num("ZCARD", k + "due:" + d);
            }
            assertEquals(1L, inShards);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void batchOfThousandCreatesThousandJobsWithResultsInOrder() {
        String topic = Topics.fresh("batch");
        StringBuilder body = new StringBuilder("[");
        for (int i = 0; i < 1000; i++) {
            body.append(i == 0 ? "" : ",").append("{\"topic\":\"").append(topic).append("\",\"id\":\"j").append(i)
                    .append("\",\"delayMs\":").append(60_000 + i).append(",\"payload\":").append(i).append('}');
        }
        Response r = post("/jobs/batch", body.append(']').toString());
        r.then().statusCode(200).body("$", hasSize(1000));
        List<String> ids = r.jsonPath().getList("id");
        for (int i = 0; i < 1000; i++) {
            assertEquals("j" + i, ids.get(i));
        }
        assertTrue(r.jsonPath().getList("status", Integer.class).stream().allMatch(s -> s == 201));
        assertEquals(1000L, redis.num("HLEN", Topics.keys(topic) + "jobs"));
        // a second send of the same batch creates nothing (per-item idempotency)
        Response again = post("/jobs/batch", body.toString());
        assertTrue(again.jsonPath().getList("status", Integer.class).stream().allMatch(s -> s == 200));
        assertEquals(1000L, redis.num("HLEN", Topics.keys(topic) + "jobs"));
    }

    @Test
    void batchWithOneInvalidItemIsRejectedWholeAndWritesNothing() {
        String topic = Topics.fresh("batchbad");
        String body = "{\"jobs\":[{\"topic\":\"" + topic + "\",\"id\":\"ok\"},{\"topic\":\"" + topic
                + "\",\"id\":\"bad\",\"delayMs\":-5},{\"topic\":\"" + topic + "\",\"id\":\"ok2\"}]}";
        post("/jobs/batch", body).then().statusCode(400).contentType(startsWith("application/problem+json"))
                .body("field", equalTo("jobs[1].delayMs"));
        assertEquals(0L, redis.countKeys("dq:{" + topic + "*"));
        assertEquals(0L, redis.num("SISMEMBER", "dq:topics", topic));
    }

    @Test
    void everyBadInputGetsItsStatusAProblemNamingTheFieldAndNoWrite() {
        String t = Topics.fresh("bad");
        String tooBig = "\"" + "x".repeat(70_000) + "\"";
        String[][] cases = {
                // body, status, field
                { "{\"topic\":\"Bad Topic\"}", "400", "topic" },
                { "{\"topic\":\"" + t + "\",\"id\":\"no spaces\"}", "400", "id" },
                { "{\"topic\":\"" + t + "\",\"id\":\"" + "a".repeat(129) + "\"}", "400", "id" },
                { "{\"topic\":\"" + t + "\",\"delayMs\":-1}", "400", "delayMs" },
                { "{\"topic\":\"" + t + "\",\"delayMs\":31536000001}", "400", "delayMs" },
                { "{\"topic\":\"" + t + "\",\"delayMs\":\"soon\"}", "400", "delayMs" },
                { "{\"topic\":\"" + t + "\",\"delayMs\":10,\"runAt\":\"2030-01-01T00:00:00Z\"}", "400", "runAt" },
                { "{\"topic\":\"" + t + "\",\"runAt\":\"tomorrow\"}", "400", "runAt" },
                { "{\"topic\":\"" + t + "\",\"runAt\":\"2999-01-01T00:00:00Z\"}", "400", "runAt" },
                { "{\"topic\":\"" + t + "\",\"maxAttempts\":0}", "400", "maxAttempts" },
                { "{\"topic\":\"" + t + "\",\"delay\":5}", "400", "delay" },
                { "{\"topic\":\"" + t + "\",", "400", "body" },
                { "[1,2]", "400", "(job)" },
                { "", "400", "body" },
                { "{\"id\":\"x\"}", "400", "topic" },
                { "{\"topic\":\"" + t + "\",\"payload\":" + tooBig + "}", "413", "payload" },
        };
        for (String[] c : cases) {
            post("/jobs", c[0]).then().statusCode(Integer.parseInt(c[1]))
                    .contentType(startsWith("application/problem+json"))
                    .body("status", equalTo(Integer.parseInt(c[1])))
                    .body("field", equalTo(c[2]))
                    .body("detail", org.hamcrest.Matchers.notNullValue());
        }
        assertEquals(0L, redis.countKeys("dq:{" + t + "*"));
        assertEquals(0L, redis.countKeys("dq:{Bad Topic*"));
        assertEquals(0L, redis.num("SISMEMBER", "dq:topics", t));
    }

    @Test
    void badPathSegmentsAreRejectedWithTheirField() {
        given().get("/jobs/UPPER/x").then().statusCode(400).body("field", equalTo("topic"));
        given().delete("/jobs/ok/bad%20id").then().statusCode(400).body("field", equalTo("id"));
        given().get("/topics/ok/dead?limit=0").then().statusCode(400).body("field", equalTo("limit"));
    }

    @Test
    void payloadsAreStoredByteForByteAsSent() {
        String topic = Topics.fresh("raw");
        // Re-serialised, these would come back as 1.2345678901234568E16, "Infinity" and '?'.
        String payload = "{\"price\": 12345678901234567.89, \"huge\":1e400,\n \"lone\":\"\\ud800\", \"list\":[ 1 ,2 ]}";
        post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"one\",\"delayMs\":600000,\"payload\":" + payload + "}")
                .then().statusCode(201);
        given().contentType(ContentType.JSON).body("[{\"topic\":\"" + topic + "\",\"id\":\"two\",\"delayMs\":600000,"
                + "\"payload\": 0.10000000000000000000001}, {\"payload\":\"x\",\"id\":\"three\",\"topic\":\"" + topic
                + "\",\"delayMs\":600000}]").post("/jobs/batch").then().statusCode(200);
        String k = Topics.keys(topic) + "jobs";
        assertEquals(payload, afterFirstNewline(redis.str("HGET", k, "one")));
        assertEquals("0.10000000000000000000001", afterFirstNewline(redis.str("HGET", k, "two")));
        assertEquals("\"x\"", afterFirstNewline(redis.str("HGET", k, "three")));
    }

    /**
     * Bodies are parsed from their bytes in one pass (JobBodyParser): a body declared in another
     * charset is still read in it, bytes that are not UTF-8 still become U+FFFD (as in the String
     * the body used to be read into), and a payload spanning many of the parser's read blocks, in
     * a batch large enough to be read while it arrives, is kept whole.
     */
    @Test
    void bodiesReadFromTheirBytesKeepTheirText() {
        String topic = Topics.fresh("bytes");
        String job = "{\"topic\":\"" + topic + "\",\"delayMs\":600000,";
        given().contentType("application/json; charset=ISO-8859-1")
                .body((job + "\"id\":\"latin\",\"payload\":\"caf\u00e9\"}").getBytes(StandardCharsets.ISO_8859_1))
                .post("/jobs").then().statusCode(201);
        java.io.ByteArrayOutputStream bad = new java.io.ByteArrayOutputStream();
        bad.writeBytes((job + "\"id\":\"bad\",\"payload\":\"a").getBytes(StandardCharsets.UTF_8));
        bad.write(0xff);
        bad.writeBytes("b\"}".getBytes(StandardCharsets.UTF_8));
        given().contentType(ContentType.JSON).body(bad.toByteArray()).post("/jobs").then().statusCode(201);
        String big = "{\"d\":\"" + "y".repeat(50_000) + "\u00e9\"}";
        given().contentType(ContentType.JSON).body("[" + job + "\"id\":\"big1\",\"payload\":" + big + "}, " + job
                + "\"payload\":" + big + ",\"id\":\"big2\"}]").post("/jobs/batch").then().statusCode(200);
        String k = Topics.keys(topic) + "jobs";
        assertEquals("\"caf\u00e9\"", afterFirstNewline(redis.str("HGET", k, "latin")));
        assertEquals("\"a\ufffdb\"", afterFirstNewline(redis.str("HGET", k, "bad")));
        assertEquals(big, afterFirstNewline(redis.str("HGET", k, "big1")));
        assertEquals(big, afterFirstNewline(redis.str("HGET", k, "big2")));
    }

    private static String afterFirstNewline(String record) {
        return record.substring(record.indexOf('\n') + 1);
    }

    @Test
    void idsThatAUrlPathCannotAddressAreRejectedAndNothingIsWritten() {
        String topic = Topics.fresh("dots");
        for (String id : List.of(".", "..")) {
            post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\"}").then().statusCode(400)
                    .body("field", equalTo("id"));
        }
        post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"a.b..c\"}").then().statusCode(201);
        assertEquals(1L, redis.num("HLEN", Topics.keys(topic) + "jobs"), "only the addressable id was written");
    }

    @Test
    void cancellingAScheduledJobRemovesItFromShardIndexAndRecord() {
        String topic = Topics.fresh("cancel");
        String runAt = post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"c1\",\"delayMs\":600000}")
                .then().statusCode(201).extract().path("runAt");
        String k = Topics.keys(topic);
        String d = day(Instant.parse(runAt));
        assertNotNull(redis.str("ZSCORE", k + "due:" + d, "c1"));

        given().delete("/jobs/" + topic + "/c1").then().statusCode(204);
        assertNull(redis.str("ZSCORE", k + "due:" + d, "c1"));
        assertNull(redis.str("HGET", k + "jobs", "c1"));
        assertNull(redis.str("ZSCORE", k + "days", d));
        given().get("/jobs/" + topic + "/c1").then().statusCode(404);
        given().delete("/jobs/" + topic + "/c1").then().statusCode(404)
                .contentType(startsWith("application/problem+json"));
    }
}
