package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.ops.HistoryRecorder;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

/** GET /history and GET /topics/{t}/history: their 400s and the shape of their answer. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class HistoryApiTest {
    @Inject
    Jobs jobs;
    @Inject
    HistoryRecorder recorder;

    @Test
    void minutesOutOfRangeOrNotANumberIs400NamingMinutes() {
        for (String path : List.of("/history", "/topics/some-topic/history")) {
            for (String bad : List.of("0", "1441", "-5", "abc", "1.5")) {
                given().queryParam("minutes", bad).get(path).then().statusCode(400)
                        .contentType("application/problem+json").body("field", equalTo("minutes"))
                        .body("detail", containsString("1440"));
            }
        }
        given().get("/topics/bad topic!/history").then().statusCode(400).body("field", equalTo("topic"));
        given().queryParam("topic", "bad topic!").get("/delayq/history").then().statusCode(400);
    }

    @Test
    void everyMinuteOldestFirstWithTheNewJobsOfATopicAndTheLatenessOfItsAttempts() {
        String topic = "hist-rest"; // configured here: per-topic history is kept for this replica's topics alone
        String ids = Topics.fresh("j");
        long enqueuedBefore = sum("/topics/" + topic + "/history", "enqueued");
        for (int i = 0; i < 3; i++) {
            jobs.schedule(JobRequest.topic(topic).id(ids + i).delay(Duration.ofHours(1)));
        }
        jobs.schedule(JobRequest.topic(topic).id(ids + 0).delay(Duration.ofHours(1))); // kept: not new
        recorder.flush();

        List<Map<String, Object>> day = given().queryParam("minutes", 1440).get("/topics/" + topic + "/history").then()
                .statusCode(200).extract().jsonPath().getList("$");
        assertEquals(1440, day.size());
        List<Map<String, Object>> hour = given().get("/topics/" + topic + "/history").then().statusCode(200)
                .extract().jsonPath().getList("$");
        assertEquals(60, hour.size(), "60 minutes by default");
        for (int i = 1; i < hour.size(); i++) {
            assertEquals(Instant.parse((String) hour.get(i - 1).get("minute")).plusSeconds(60),
                    Instant.parse((String) hour.get(i).get("minute")), "one entry a minute, oldest first");
        }
        Map<String, Object> empty = hour.get(0);
        assertEquals(0, empty.get("enqueued"));
        assertEquals(0, empty.get("succeeded"));
        assertEquals(0, empty.get("failed"));
        assertTrue(empty.containsKey("latenessP99Ms"), "present");
        assertNull(empty.get("latenessP99Ms"), "null without an attempt");
        long enqueued = hour.stream().mapToLong(m -> ((Number) m.get("enqueued")).longValue()).sum();
        assertEquals(enqueuedBefore + 3, enqueued, "three new ids; the one kept is no new job");

        // A topic this replica neither serves nor configures: in the total alone.
        String stranger = Topics.fresh("hist-stranger");
        long totalBefore = sum("/history", "enqueued");
        jobs.schedule(JobRequest.topic(stranger).id("s").delay(Duration.ofHours(1)));
        recorder.flush();
        assertEquals(0, sum("/topics/" + stranger + "/history", "enqueued"), "no history of its own kept here");
        assertEquals(totalBefore + 1, sum("/history", "enqueued"), "counted in the total");

        // "lifecycle" is served here: one attempt that fails, then one that succeeds.
        String id = Topics.fresh("h");
        long before = sum("/topics/lifecycle/history", "failed");
        long succeededBefore = sum("/topics/lifecycle/history", "succeeded");
        jobs.schedule(JobRequest.topic("lifecycle").id(id).payload(List.of("fail", "ok")).delay(Duration.ZERO));
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> {
            recorder.flush();
            return sum("/topics/lifecycle/history", "failed") >= before + 1
                    && sum("/topics/lifecycle/history", "succeeded") >= succeededBefore + 1;
        });
        List<Map<String, Object>> recent = given().queryParam("minutes", 3).get("/topics/lifecycle/history").then()
                .statusCode(200).extract().jsonPath().getList("$");
        assertTrue(recent.stream().anyMatch(m -> m.get("latenessP99Ms") != null), "attempts have a lateness p99");
        assertTrue(given().queryParam("minutes", 5).get("/history").then().statusCode(200).extract().jsonPath()
                .getList("enqueued", Integer.class).stream().mapToInt(Integer::intValue).sum() >= 4,
                "the total holds this topic's jobs and lifecycle's");
    }

    private static long sum(String path, String field) {
        return given().queryParam("minutes", 60).get(path).then().statusCode(200).extract().jsonPath()
                .getList(field, Long.class).stream().mapToLong(Long::longValue).sum();
    }
}
