package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import io.delayq.store.RedisClock;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusMock;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/**
 * The horizon (delayq.horizon, 365 days here) is counted from Redis' now, not this host's: a
 * Redis clock days away from the host's is played by a {@link RedisClock} that says so (a real
 * redis-server on another clock cannot be had on one machine).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class HorizonClockTest {
    private static final Duration HORIZON = Duration.ofDays(365);

    /** Redis time as a clock {@code skew} away from this host's would read it. */
    static final class SkewedClock extends RedisClock {
        private final long skewMs;

        SkewedClock(Duration skew) {
            this.skewMs = skew.toMillis();
        }

        @Override
        public long redisNow() {
            return super.redisNow() + skewMs;
        }
    }

    private static io.restassured.response.Response enqueue(String topic, Instant runAt) {
        return given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"runAt\":\"" + runAt + "\"}")
                .post("/jobs");
    }

    @Test
    void aRunAtPastTheHostsHorizonIsAcceptedWhenRedisTimeIsAhead() {
        QuarkusMock.installMockForType(new SkewedClock(Duration.ofDays(3)), RedisClock.class);
        String topic = Topics.fresh("horizon-ahead");
        enqueue(topic, Instant.now().plus(HORIZON).plus(Duration.ofDays(1))).then().statusCode(201);
        enqueue(topic, Instant.now().plus(HORIZON).plus(Duration.ofDays(4))).then().statusCode(400)
                .body("field", equalTo("runAt"));
    }

    @Test
    void aRunAtWithinTheHostsHorizonIsRefusedWhenRedisTimeIsBehind() {
        QuarkusMock.installMockForType(new SkewedClock(Duration.ofDays(-3)), RedisClock.class);
        String topic = Topics.fresh("horizon-behind");
        enqueue(topic, Instant.now().plus(HORIZON).minus(Duration.ofDays(1))).then().statusCode(400)
                .body("field", equalTo("runAt"));
        enqueue(topic, Instant.now().plus(HORIZON).minus(Duration.ofDays(4))).then().statusCode(201);
        // A delay is added to Redis' now in the script: the horizon itself, whatever the clocks.
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"delayMs\":" + HORIZON.toMillis() + "}")
                .post("/jobs").then().statusCode(201);
    }
}
