package io.delayq.ops;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.hasItem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.core.TopicControl;
import io.delayq.dev.RedisProcess;
import io.delayq.dispatch.TestObservers;
import io.delayq.store.Inspection;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class OpsTest {
    @Inject
    Jobs jobs;
    @Inject
    Inspection store;
    @Inject
    TopicControl control;

    static double metric(String name, String topic) {
        String body = given().get("/q/metrics").then().statusCode(200).extract().asString();
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{[^}]*topic=\"" + Pattern.quote(topic)
                + "\"[^}]*\\} ([0-9.eE+-]+|NaN)$").matcher(body);
        return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }

    @Inject
    io.delayq.ops.RedisMemory memory;

    @Test
    void theMemoryRatioIsReadByOneReplicaAMinuteAndAnEvictingPolicyShowsInReadiness() {
        try (io.delayq.dev.Resp redis = RedisTestResource.resp()) {
            try {
                redis.call("DEL", "dq:memory-read");
                redis.call("CONFIG", "SET", "maxmemory", "1000000000");
                assertTrue(memory.read(), "first this minute: it reads");
                assertFalse(memory.read(), "the minute's claim is taken: one reader per minute");
                String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
                Matcher m = Pattern.compile("(?m)^delayq_redis_memory_used_ratio\\S* ([0-9.eE-]+)$").matcher(metrics);
                assertTrue(m.find(), "the gauge is there with a maxmemory");
                double ratio = Double.parseDouble(m.group(1));
                assertTrue(ratio > 0 && ratio < 1, "used / maxmemory: " + ratio);
                given().get("/q/health/ready").then().statusCode(200).body(org.hamcrest.Matchers.not(containsString("redisMaxmemoryPolicy")));

                redis.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
                redis.call("DEL", "dq:memory-read");
                assertTrue(memory.read());
                given().get("/q/health/ready").then().statusCode(200).body(containsString("redisMaxmemoryPolicy"))
                        .body(containsString("allkeys-lru"));
            } finally {
                redis.call("CONFIG", "SET", "maxmemory-policy", "noeviction");
                redis.call("CONFIG", "SET", "maxmemory", "0");
                redis.call("DEL", "dq:memory-read");
                memory.read();
            }
        }
    }

    @Test
    void metricsCountEachStepOfTheTopicsJobs() {
        for (int i = 0; i < 5; i++) {
            jobs.schedule(JobRequest.topic("metered").payload("ok"));
        }
        String bad = jobs.schedule(JobRequest.topic("metered").payload("fail").maxAttempts(2)).id();
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> metric("delayq_jobs_dead_total", "metered") == 1.0
                && metric("delayq_jobs_succeeded_total", "metered") == 5.0);
        assertEquals(6.0, metric("delayq_jobs_enqueued_total", "metered"));
        assertEquals(7.0, metric("delayq_jobs_dispatched_total", "metered"));
        assertEquals(2.0, metric("delayq_jobs_failed_total", "metered"));
        assertEquals(1.0, metric("delayq_jobs_retried_total", "metered"));
        assertEquals(7.0, metric("delayq_job_lateness_seconds_count", "metered"));
        assertEquals(7.0, metric("delayq_job_duration_seconds_count", "metered"));
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> metric("delayq_queue_dead", "metered") == 1.0);
        assertEquals(0.0, metric("delayq_queue_scheduled", "metered"));
        store.purge("metered", bad);
    }

    /** "stalled" is configured (delayq.topics.stalled.max-attempts) and served by no observer. */
    @Test
    void oldestOverdueAgeShowsJobsNobodyTakes() {
        String topic = "stalled";
        jobs.schedule(JobRequest.topic(topic).id(Topics.fresh("s")).runAt(java.time.Instant.now().minusSeconds(120)));
        Awaitility.await().atMost(Duration.ofSeconds(15))
                .until(() -> metric("delayq_queue_oldest_overdue_seconds", topic) >= 120.0);
        assertEquals(1.0, metric("delayq_queue_scheduled", topic));
        assertEquals(1.0, metric("delayq_queue_due_now", topic));
    }

    /** Due jobs in day shards older than the few the gauges pass by default are counted too (DQNEEDDAY). */
    @Test
    void dueNowCountsJobsDueDaysAgo() {
        // A configured topic: a replica has gauges only for topics it serves or configures.
        String topic = "stalled-days";
        for (int days : new int[] { 3, 5, 5 }) {
            jobs.schedule(JobRequest.topic(topic).runAt(java.time.Instant.now().minus(Duration.ofDays(days))));
        }
        jobs.schedule(JobRequest.topic(topic).delay(Duration.ofHours(1)));
        Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> metric("delayq_queue_due_now", topic) == 3.0);
        assertEquals(4.0, metric("delayq_queue_scheduled", topic));
        double overdue = metric("delayq_queue_oldest_overdue_seconds", topic);
        assertEquals(5 * 86_400.0, overdue, 60.0, "the oldest is the one due 5 days ago");
    }

    /**
     * The autoscaling signals (k8s/autoscaling/): while nobody takes a topic's jobs (paused, as
     * when its observers are stopped) the 1,000 due ones show as due now and the oldest of them
     * ages; once they are taken again both fall to 0 within seconds (the gauges' 5 s cache, then
     * the observer's run).
     */
    @Test
    void dueNowCountsJobsNobodyTakesAndFallsToZeroOnceTheyAreTaken() {
        String topic = BacklogObserver.TOPIC;
        int runBefore = BacklogObserver.RUN.get();
        control.pause(topic);
        try {
            StringBuilder batch = new StringBuilder("[");
            for (int i = 0; i < 1000; i++) {
                batch.append(i == 0 ? "" : ",").append("{\"topic\":\"").append(topic).append("\",\"id\":\"b-")
                        .append(i).append("\"}");
            }
            given().contentType("application/json").body(batch.append(']').toString()).post("/jobs/batch").then()
                    .statusCode(200);
            Awaitility.await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(250))
                    .until(() -> metric("delayq_queue_due_now", topic) == 1000.0);
            double overdue = metric("delayq_queue_oldest_overdue_seconds", topic);
            Awaitility.await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(250))
                    .until(() -> metric("delayq_queue_oldest_overdue_seconds", topic) > overdue);
            assertEquals(1000.0, metric("delayq_queue_due_now", topic), "nothing of a paused topic is taken");
            assertEquals(runBefore, BacklogObserver.RUN.get(), "a paused topic's observer ran a job");
            // What the autoscaling queries leave out: a paused backlog waits for the resume, not for replicas.
            assertEquals(1.0, metric("delayq_topic_paused", topic), "delayq_topic_paused while paused");
        } finally {
            control.resume(topic);
        }
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(250))
                .until(() -> metric("delayq_queue_due_now", topic) == 0.0
                        && metric("delayq_queue_oldest_overdue_seconds", topic) == 0.0);
        assertEquals(0.0, metric("delayq_topic_paused", topic), "delayq_topic_paused once resumed");
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> BacklogObserver.RUN.get() == runBefore + 1000);
    }

    @Test
    void aTopicOnlyEnqueuedToHasNoSeriesOfItsOwnAndCountsUnderOther() {
        String topic = Topics.fresh("elsewhere");
        double before = Math.max(0, metric("delayq_jobs_enqueued_total", "other"));
        for (int i = 0; i < 3; i++) {
            given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"delayMs\":3600000}").post("/jobs")
                    .then().statusCode(201);
        }
        jobs.schedule(JobRequest.topic(topic).delay(Duration.ofHours(1)));
        String body = given().get("/q/metrics").then().statusCode(200).extract().asString();
        assertFalse(body.contains("topic=\"" + topic + "\""), "no series of its own: neither a meter nor a gauge");
        // >=: other tests' schedules may tick into topics of no observer meanwhile.
        assertTrue(metric("delayq_jobs_enqueued_total", "other") >= before + 4, "the enqueues count under other");
        assertTrue(metric("delayq_queue_scheduled", "metered") >= 0, "the gauges of a served topic are there");
        given().get("/topics").then().statusCode(200).body("topic", hasItem(topic));
    }

    @Test
    void readinessIsDownWithAReasonWhileRedisIsAwayAndDispatchResumesWhenItIsBack() {
        given().get("/q/health/ready").then().statusCode(200);
        given().get("/q/health/live").then().statusCode(200);
        given().get("/q/health/started").then().statusCode(200);
        RedisProcess redis = RedisTestResource.redis();
        redis.stop();
        try {
            Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> given().get("/q/health/ready").statusCode() == 503);
            given().get("/q/health/ready").then().statusCode(503).body(containsString("Redis"))
                    .body(containsString("DOWN"));
            given().get("/q/health/live").then().statusCode(200);
        } finally {
            redis.start();
        }
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> given().get("/q/health/ready").statusCode() == 200);
        String id = Topics.fresh("back").replace('-', '_');
        Awaitility.await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
                .until(() -> jobs.schedule(JobRequest.topic("rec").id(id)) != null);
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> TestObservers.RECORDED.containsKey(id));
    }
}
