package io.delayq.ops;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.dev.Resp;
import io.delayq.store.TopicAdmin;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

/**
 * delayq.topics-retention, through {@link TopicRetention#look} with a short retention (the
 * scheduled sweep looks at one topic a minute with the configured one). "rec" is served here.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class TopicRetentionTest {
    private static final Duration SHORT = Duration.ofSeconds(2);
    @Inject
    TopicRetention retention;
    @Inject
    Jobs jobs;
    @Inject
    TopicAdmin store;
    @Inject
    ReplicaRegistry registry;

    @Test
    void aTopicWithNoJobsThatNobodyServesIsForgottenOnceItsRetentionPassed() {
        String topic = Topics.fresh("retained");
        given().post("/topics/" + topic + "/pause").then().statusCode(200);
        long start = System.nanoTime();
        assertFalse(retention.look(topic, SHORT), "the first look starts its clock");
        Awaitility.await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(300))
                .until(() -> retention.look(topic, SHORT));
        assertTrue(System.nanoTime() - start >= SHORT.toNanos(), "not before its retention");
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.num("SISMEMBER", "dq:topics", topic));
            assertEquals(0L, redis.num("EXISTS", Topics.keys(topic) + "paused"));
            assertEquals(0L, redis.num("HEXISTS", "dq:topics:active", topic));
        }
        given().get("/topics").then().body("topic", not(hasItem(topic)));
    }

    @Test
    void aTopicWithJobsIsKeptAndRecordedInUse() {
        String topic = Topics.fresh("retained-busy");
        String id = jobs.schedule(JobRequest.topic(topic).delay(Duration.ofHours(1))).id();
        assertFalse(retention.look(topic, Duration.ZERO));
        assertFalse(retention.look(topic, Duration.ZERO));
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(1L, redis.num("SISMEMBER", "dq:topics", topic));
            assertNotNull(redis.str("HGET", "dq:topics:active", topic));
        }
        jobs.cancel(topic, id);
    }

    @Test
    void theRecordsOfTopicsNotKnownGoAtTheEndOfARoundAndThoseOfKnownOnesStay() {
        String gone = Topics.fresh("served-once");
        String known = Topics.fresh("retained-known");
        given().post("/topics/" + known + "/pause").then().statusCode(200);
        try (Resp redis = RedisTestResource.resp()) {
            redis.num("HSET", "dq:topics:active", gone, "1", known, "1");
            // older than 2 ms after the epoch: these two only, not the record of "rec", which the
            // registry writes once (then every 10 minutes) and another test checks
            assertEquals(1, store.dropStaleActivity(2));
            assertEquals(0L, redis.num("HEXISTS", "dq:topics:active", gone));
            assertEquals(1L, redis.num("HEXISTS", "dq:topics:active", known), "a known topic's waits for its look");
        }
    }

    @Test
    void aServedTopicIsKeptAndTheRegistryRecordsWhenItWasServedInRedisTime() {
        // Written when the served topics change and every 10 minutes: an earlier test that
        // restarted the shared Redis lost it, so ask for it again.
        registry.refreshActive();
        try (Resp redis = RedisTestResource.resp()) {
            Awaitility.await().atMost(Duration.ofSeconds(15))
                    .until(() -> redis.str("HGET", "dq:topics:active", "rec") != null);
            long servedAt = Long.parseLong(redis.str("HGET", "dq:topics:active", "rec"));
            long redisNow = Long.parseLong(redis.list("TIME").get(0).toString()) * 1000;
            assertTrue(redisNow - servedAt < 30_000 && servedAt - redisNow < 2_000, servedAt + " vs " + redisNow);
            assertFalse(retention.look("rec", Duration.ZERO), "served by this replica");
        }
    }
}
