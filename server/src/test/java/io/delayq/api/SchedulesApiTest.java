package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.endsWith;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItems;
import static org.hamcrest.Matchers.nullValue;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.dispatch.TestObservers;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/** {@code /schedules}: create, change, list, trigger and delete, and the ticks of a schedule made over REST. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class SchedulesApiTest {
    private static io.restassured.specification.RequestSpecification json(String body) {
        return given().contentType(ContentType.JSON).body(body);
    }

    @Test
    void aScheduleIsCreatedChangedTriggeredAndDeleted() {
        String name = Topics.fresh("report");
        String topic = Topics.fresh("sched-api");
        json("{\"every\":\"1h\",\"topic\":\"" + topic + "\",\"payload\":{\"n\":12345678901234567.89}}")
                .put("/schedules/" + name).then().statusCode(201).header("Location", endsWith("/schedules/" + name))
                .body("source", equalTo("api")).body("every", equalTo("1h")).body("misfire", equalTo("fire-once"))
                .body("lastTick", nullValue()).body("cron", nullValue());
        String next = given().get("/schedules/" + name).then().statusCode(200).extract().path("nextTick");
        assertEquals(0, Instant.parse(next).toEpochMilli() % 3_600_000, "every 1h ticks on the hour: " + next);

        json("{\"cron\":\"0 15 9 ? * MON\",\"timeZone\":\"America/New_York\",\"topic\":\"" + topic
                + "\",\"misfire\":\"skip\"}").put("/schedules/" + name).then().statusCode(200)
                .body("cron", equalTo("0 15 9 ? * MON")).body("timeZone", equalTo("America/New_York"))
                .body("misfire", equalTo("skip")).body("every", nullValue()).body("payload", nullValue());
        given().get("/schedules").then().statusCode(200)
                .body("name", hasItems(name, "test-nightly"));

        json("{\"every\":\"1h\",\"topic\":\"" + topic + "\",\"payload\":{\"n\":12345678901234567.89}}")
                .put("/schedules/" + name).then().statusCode(200);
        String id = given().post("/schedules/" + name + "/trigger").then().statusCode(201)
                .body("id", startsWith(name + ":trigger:")).body("topic", equalTo(topic)).body("state", equalTo("scheduled"))
                .extract().path("id");
        given().get("/jobs/" + topic + "/" + id).then().statusCode(200);
        try (Resp r = RedisTestResource.resp()) {
            String record = r.str("HGET", Topics.keys(topic) + "jobs", id);
            assertTrue(record.endsWith("\n{\"n\":12345678901234567.89}"), "payload kept byte for byte: " + record);
        }

        given().delete("/schedules/" + name).then().statusCode(204);
        given().get("/schedules/" + name).then().statusCode(404);
        given().delete("/schedules/" + name).then().statusCode(404);
        given().post("/schedules/" + name + "/trigger").then().statusCode(404);
        given().get("/jobs/" + topic + "/" + id).then().statusCode(200); // a triggered job outlives its schedule
    }

    @Test
    void badDefinitionsGet400NamingTheFieldAndWriteNothing() {
        String name = Topics.fresh("bad");
        Map<String, String> cases = Map.of(
                "{\"topic\":\"t\"}", "cron",
                "{\"cron\":\"0 * * * * ?\",\"every\":\"1m\",\"topic\":\"t\"}", "cron",
                "{\"cron\":\"every day\",\"topic\":\"t\"}", "cron",
                "{\"every\":\"soon\",\"topic\":\"t\"}", "every",
                "{\"every\":\"100ms\",\"topic\":\"t\"}", "every",
                "{\"every\":\"1m\",\"topic\":\"Bad Topic\"}", "topic",
                "{\"every\":\"1m\"}", "topic",
                "{\"cron\":\"0 0 2 * * ?\",\"timeZone\":\"Mars/Olympus\",\"topic\":\"t\"}", "timeZone",
                "{\"every\":\"1m\",\"topic\":\"t\",\"misfire\":\"later\"}", "misfire",
                "{\"every\":\"1m\",\"topic\":\"t\",\"runAt\":\"2026-12-01T00:00:00Z\"}", "runAt");
        Map<String, String> steering = Map.of(
                "{\"every\":\"1m\",\"topic\":\"t\",\"overlap\":\"queue\"}", "overlap",
                "{\"every\":\"1m\",\"topic\":\"t\",\"start\":\"tomorrow\"}", "start",
                "{\"every\":\"1m\",\"topic\":\"t\",\"end\":12}", "end",
                "{\"every\":\"1m\",\"topic\":\"t\",\"start\":\"2030-01-01T00:00:00Z\",\"end\":\"2030-01-01T00:00:00Z\"}",
                "end");
        cases = new java.util.HashMap<>(cases);
        cases.putAll(steering);
        cases.forEach((body, field) -> json(body).put("/schedules/" + name).then().statusCode(400)
                .contentType("application/problem+json").body("field", equalTo(field)));
        // A Duration, but no long of milliseconds (it overflowed into a 500), and one just past the maximum.
        for (String every : new String[] { "PT9999999999999H", "3651d", "PT-9999999999999H" }) {
            json("{\"every\":\"" + every + "\",\"topic\":\"t\"}").put("/schedules/" + name).then().statusCode(400)
                    .contentType("application/problem+json").body("field", equalTo("every"))
                    .body("detail", containsString("every must be"));
        }
        json("{\"every\":").put("/schedules/" + name).then().statusCode(400).body("field", equalTo("body"));
        json("{\"every\":\"1m\",\"topic\":\"t\"}").put("/schedules/has:colon").then().statusCode(400)
                .body("field", equalTo("name"));
        json("{\"every\":\"1m\",\"topic\":\"t\",\"payload\":\"" + "x".repeat(70_000) + "\"}").put("/schedules/" + name)
                .then().statusCode(413).body("field", equalTo("payload"));
        given().get("/schedules/" + name).then().statusCode(404);
    }

    @Test
    void aScheduleOfTheConfigurationCanBeTriggeredButNotChangedOverRest() {
        given().get("/schedules/test-nightly").then().statusCode(200).body("source", equalTo("config"))
                .body("cron", equalTo("0 0 2 * * ?")).body("timeZone", equalTo("Europe/Berlin"))
                .body("topic", equalTo("nightly-report")).body("payload.report", equalTo("daily"));
        json("{\"every\":\"1m\",\"topic\":\"t\"}").put("/schedules/test-nightly").then().statusCode(409)
                .body("detail", org.hamcrest.Matchers.containsString("delayq.schedules.test-nightly"));
        given().delete("/schedules/test-nightly").then().statusCode(409);
        given().post("/schedules/test-nightly/trigger").then().statusCode(201).body("topic", equalTo("nightly-report"));
    }

    @Test
    void aScheduleMadeOverRestTicksOnTimeOnceATickAndStopsWhenDeleted() {
        String name = Topics.fresh("every-second");
        json("{\"every\":\"1s\",\"topic\":\"rec\",\"payload\":{\"tick\":true}}").put("/schedules/" + name).then()
                .statusCode(201);
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> ticks(name).size() >= 4);
        given().delete("/schedules/" + name).then().statusCode(204);
        int atDelete = ticks(name).size();
        List<TestObservers.Delivery> seen = ticks(name);
        for (TestObservers.Delivery d : seen) {
            long tick = Long.parseLong(d.id().substring(name.length() + 1));
            assertEquals(0, tick % 1000, "every 1s ticks on the second: " + d.id());
            assertEquals("{\"tick\":true}", d.payload());
            assertTrue(d.redisMs() - tick < 1000, "ran " + (d.redisMs() - tick) + " ms after its tick");
            assertEquals(1, TestObservers.RECORDED.get(d.id()).size(), "one run per tick: " + d.id());
        }
        // A tick already enqueued (up to a second ahead) still runs; none after it.
        Awaitility.await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4))
                .until(() -> ticks(name).size() <= atDelete + 1);
    }

    @Test
    void aDeletedScheduleForgetsItsLastTicksJob() {
        // With overlap skip each partition keeps the job of the schedule's last tick there
        // ("<name>:job" in ticks); deleted, only the tick record that fences it off stays.
        String name = Topics.fresh("forgotten");
        String ticks = Topics.keys("rec") + "ticks";
        json("{\"every\":\"1s\",\"topic\":\"rec\",\"overlap\":\"skip\"}").put("/schedules/" + name).then()
                .statusCode(201);
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> {
            try (Resp r = RedisTestResource.resp()) {
                return r.num("HEXISTS", ticks, name + ":job") == 1;
            }
        });
        given().delete("/schedules/" + name).then().statusCode(204);
        try (Resp r = RedisTestResource.resp()) {
            assertEquals(0, r.num("HEXISTS", ticks, name + ":job"));
            assertEquals(1, r.num("HEXISTS", ticks, name));
        }
    }

    @Test
    void aScheduleDeletedThroughAnotherReplicaStopsTickingAtOnce() {
        String name = Topics.fresh("elsewhere");
        json("{\"every\":\"1s\",\"topic\":\"rec\"}").put("/schedules/" + name).then().statusCode(201);
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> ticks(name).size() >= 2);
        try (Resp r = RedisTestResource.resp()) {
            r.num("HDEL", "dq:schedules", name); // as another replica's DELETE leaves it
        }
        int atDelete = ticks(name).size();
        // This replica re-reads the definitions only every 5 s, but checks each before a tick: at
        // most the tick enqueued ahead (and one running) still come.
        Awaitility.await().during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(5))
                .until(() -> ticks(name).size() <= atDelete + 2);
        Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(
                () -> given().get("/schedules/" + name).then().statusCode(404));
    }

    @Test
    void movingAScheduleToAnotherTopicNeverRunsATickInBoth() {
        String name = Topics.fresh("moving");
        String other = Topics.fresh("moved");
        json("{\"every\":\"1s\",\"topic\":\"rec\"}").put("/schedules/" + name).then().statusCode(201);
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> ticks(name).size() >= 2);
        json("{\"every\":\"1s\",\"topic\":\"" + other + "\"}").put("/schedules/" + name).then().statusCode(200);
        // The new topic has no observer: its tick jobs stay in Redis, to be compared with the old topic's runs.
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> {
            try (Resp r = RedisTestResource.resp()) {
                return r.num("HLEN", Topics.keys(other) + "jobs") >= 2;
            }
        });
        given().delete("/schedules/" + name).then().statusCode(204);
        java.util.Set<String> inOld = new java.util.HashSet<>();
        ticks(name).forEach(d -> inOld.add(d.id()));
        try (Resp r = RedisTestResource.resp()) {
            for (Object id : r.list("HKEYS", Topics.keys(other) + "jobs")) {
                assertTrue(!inOld.contains(id.toString()), "tick " + id + " ran in the old topic and was enqueued in the new");
            }
        }
    }

    @Test
    void overlapStartAndEndAreKeptAndShown() {
        String name = Topics.fresh("bounded");
        String topic = Topics.fresh("sched-bounded");
        json("{\"every\":\"1h\",\"topic\":\"" + topic + "\",\"overlap\":\"skip\",\"start\":\"2099-01-01T00:00:00+01:00\","
                + "\"end\":\"2099-12-31T00:00:00Z\"}").put("/schedules/" + name).then().statusCode(201)
                .body("overlap", equalTo("skip")).body("start", equalTo("2098-12-31T23:00:00Z"))
                .body("end", equalTo("2099-12-31T00:00:00Z")).body("paused", equalTo(false));
        // The first tick is the first hour at or after start; and one that has ended has no next tick.
        given().get("/schedules/" + name).then().statusCode(200).body("nextTick", equalTo("2098-12-31T23:00:00Z"));
        json("{\"every\":\"1h\",\"topic\":\"" + topic + "\",\"end\":\"2020-01-01T00:00:00Z\"}").put("/schedules/" + name)
                .then().statusCode(200).body("overlap", equalTo("allow")).body("start", nullValue()).body("nextTick", nullValue());
        given().delete("/schedules/" + name).then().statusCode(204);
    }

    @Test
    void aPausedScheduleFiresNothingUntilResumed() {
        String name = Topics.fresh("pausing");
        json("{\"every\":\"1s\",\"topic\":\"rec\",\"misfire\":\"skip\"}").put("/schedules/" + name).then().statusCode(201);
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> ticks(name).size() >= 2);
        given().post("/schedules/" + name + "/pause").then().statusCode(200).body("paused", equalTo(true))
                .body("nextTick", nullValue());
        given().post("/schedules/" + name + "/pause").then().statusCode(200).body("paused", equalTo(true));
        given().get("/schedules").then().statusCode(200).body("find { it.name == '" + name + "' }.paused", equalTo(true));
        // A change keeps the pause.
        json("{\"every\":\"2s\",\"topic\":\"rec\",\"misfire\":\"skip\"}").put("/schedules/" + name).then().statusCode(200)
                .body("paused", equalTo(true));
        int atPause = ticks(name).size();
        // The tick enqueued ahead is cancelled: nothing more runs.
        Awaitility.await().during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(6)).until(() -> ticks(name).size() == atPause);
        try (Resp r = RedisTestResource.resp()) {
            assertTrue(r.str("HGET", "dq:schedules", name).contains("\"paused\":true"), "the pause is kept in Redis");
        }
        given().post("/schedules/" + name + "/resume").then().statusCode(200).body("paused", equalTo(false))
                .body("nextTick", org.hamcrest.Matchers.notNullValue());
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> ticks(name).size() >= atPause + 2);
        given().post("/schedules/" + name + "-none/pause").then().statusCode(404);
        given().post("/schedules/test-nightly/pause").then().statusCode(409);
        given().delete("/schedules/" + name).then().statusCode(204);
    }

    @Test
    void aBackfillEnqueuesEachTickOnceDueNow() {
        String name = Topics.fresh("backfill");
        String topic = Topics.fresh("sched-backfill"); // no observer: the jobs stay to be looked at
        json("{\"every\":\"1h\",\"topic\":\"" + topic + "\",\"payload\":{\"b\":1}}").put("/schedules/" + name).then()
                .statusCode(201);
        String range = "{\"from\":\"2026-06-01T00:00:00Z\",\"to\":\"2026-06-01T03:00:00Z\"}";
        long before = System.currentTimeMillis();
        json(range).post("/schedules/" + name + "/backfill").then().statusCode(200).body("enqueued", equalTo(4))
                .body("skipped", equalTo(0));
        String id = name + ":" + Instant.parse("2026-06-01T02:00:00Z").toEpochMilli();
        String runAt = given().get("/jobs/" + topic + "/" + id).then().statusCode(200).extract().path("runAt");
        assertTrue(Instant.parse(runAt).toEpochMilli() >= before - 5000, "due now, not at its tick: " + runAt);
        json(range).post("/schedules/" + name + "/backfill").then().statusCode(200).body("enqueued", equalTo(0))
                .body("skipped", equalTo(4));
        // Bad ranges: 400 naming the field, nothing written.
        Map<String, String> bad = Map.of(
                "{\"from\":\"2026-06-01T00:00:00Z\",\"to\":\"2026-08-01T00:00:00Z\"}", "to",
                "{\"from\":\"2026-06-02T00:00:00Z\",\"to\":\"2026-06-01T00:00:00Z\"}", "to",
                "{\"to\":\"2026-06-01T00:00:00Z\"}", "from",
                "{\"from\":\"yesterday\",\"to\":\"2026-06-01T00:00:00Z\"}", "from",
                "{\"from\":\"2026-06-01T00:00:00Z\",\"to\":\"2026-06-01T00:00:00Z\",\"every\":\"1h\"}", "every",
                "{\"from\":\"2099-01-01T00:00:00Z\",\"to\":\"2099-01-01T02:00:00Z\"}", "to");
        bad.forEach((body, field) -> json(body).post("/schedules/" + name + "/backfill").then().statusCode(400)
                .contentType("application/problem+json").body("field", equalTo(field)));
        try (Resp r = RedisTestResource.resp()) {
            assertEquals(4, r.num("HLEN", Topics.keys(topic) + "jobs"), "only the first backfill wrote jobs");
            // The tick record was raised to the range's last tick: the schedule never fires those again.
            String record = r.str("HGET", Topics.keys(topic) + "ticks", name);
            assertTrue(record != null && Long.parseLong(record) >= Instant.parse("2026-06-01T03:00:00Z").toEpochMilli(),
                    "tick record " + record);
        }
        json(range).post("/schedules/" + name + "-none/backfill").then().statusCode(404);
        given().delete("/schedules/" + name).then().statusCode(204);
    }

    @Test
    void theDashboardPausesAndResumesAScheduleMadeOverRest() {
        String name = Topics.fresh("ui-pause");
        json("{\"every\":\"1h\",\"topic\":\"" + Topics.fresh("sched-ui") + "\"}").put("/schedules/" + name).then()
                .statusCode(201);
        given().get("/delayq").then().statusCode(200).body(containsString("id=\"pause-" + name + "\""))
                .body(org.hamcrest.Matchers.not(containsString("id=\"pause-test-nightly\"")));
        given().post("/delayq/schedules/" + name + "/pause").then().statusCode(403); // no dashboard header: refused
        given().get("/schedules/" + name).then().body("paused", equalTo(false));
        given().header("X-Delayq-UI", "1").post("/delayq/schedules/" + name + "/pause").then().statusCode(200)
                .body(containsString("paused " + name)).body(containsString("id=\"resume-" + name + "\""));
        given().get("/schedules/" + name).then().body("paused", equalTo(true));
        given().header("X-Delayq-UI", "1").post("/delayq/schedules/" + name + "/resume").then().statusCode(200)
                .body(containsString("resumed " + name)).body(containsString("id=\"pause-" + name + "\""));
        given().get("/schedules/" + name).then().body("paused", equalTo(false));
        given().header("X-Delayq-UI", "1").post("/delayq/schedules/test-nightly/pause").then().statusCode(200)
                .body(containsString("declared in the configuration"));
        given().delete("/schedules/" + name).then().statusCode(204);
    }

    private static List<TestObservers.Delivery> ticks(String name) {
        List<TestObservers.Delivery> out = new ArrayList<>();
        TestObservers.RECORDED.forEach((id, d) -> {
            if (id.startsWith(name + ":")) {
                out.addAll(d);
            }
        });
        return out;
    }
}
