package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisProcess;
import io.delayq.support.RedisTestResource;
import io.delayq.dev.Resp;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class RedisOutageTest {

    @Test
    void redisAwayGives503WithRetryAfterAndEnqueueWorksAgainWhenItIsBack() {
        String topic = Topics.fresh("outage");
        String body = "{\"topic\":\"" + topic + "\",\"id\":\"o1\",\"delayMs\":60000}";
        RedisProcess redis = RedisTestResource.redis();
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"warm\"}").post("/jobs")
                .then().statusCode(201);
        redis.stop();
        try {
            given().contentType(ContentType.JSON).body(body).post("/jobs").then().statusCode(503)
                    .header("Retry-After", "1").contentType(startsWith("application/problem+json"))
                    .body("status", equalTo(503));
            given().get("/jobs/" + topic + "/o1").then().statusCode(503);
        } finally {
            redis.start();
        }
        // The same service, not restarted: the client reconnects and scripts are loaded again.
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).until(() -> given()
                .contentType(ContentType.JSON).body(body).post("/jobs").statusCode() == 201);
        try (Resp r = RedisTestResource.resp()) {
            assertEquals(1L, r.num("HLEN", Topics.keys(topic) + "jobs"));
        }
    }

    @Test
    void redisAtMaxClientsGives503WithRetryAfterAndEnqueueWorksAgainWhenAClientSlotIsFree() {
        String topic = Topics.fresh("maxclients");
        String body = "{\"topic\":\"" + topic + "\",\"id\":\"m1\",\"delayMs\":60000}";
        try (Resp admin = RedisTestResource.resp()) {
            // This connection is the only client left, and the only one Redis accepts: every
            // connection the service opens again is refused with "ERR max number of clients reached".
            admin.call("CONFIG", "SET", "maxclients", "1");
            try {
                dropTheServicesConnections(admin);
                given().contentType(ContentType.JSON).body(body).post("/jobs").then().statusCode(503)
                        .header("Retry-After", "1").contentType(startsWith("application/problem+json"))
                        .body("status", equalTo(503));
                assertEquals(0L, admin.num("EXISTS", Topics.keys(topic) + "jobs"));
            } finally {
                admin.call("CONFIG", "SET", "maxclients", "10000");
            }
        }
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).until(() -> given()
                .contentType(ContentType.JSON).body(body).post("/jobs").statusCode() == 201);
    }

    /**
     * A Redis that wants a password delayq does not send (NOAUTH; a wrong one is WRONGPASS, see
     * RedisGatewayTest): 503 with Retry-After naming the cause, readiness DOWN saying why, and all
     * well again once Redis and delayq agree.
     */
    @Test
    void redisRefusingTheCredentialsGives503AndReadinessDownWithTheReason() {
        String topic = Topics.fresh("noauth");
        String body = "{\"topic\":\"" + topic + "\",\"id\":\"n1\",\"delayMs\":60000}";
        try (Resp admin = RedisTestResource.resp()) {
            // This connection stays authenticated; every connection the service opens again is refused.
            admin.call("CONFIG", "SET", "requirepass", "ProbePass42");
            try {
                dropTheServicesConnections(admin);
                Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).untilAsserted(() ->
                        given().contentType(ContentType.JSON).body(body).post("/jobs").then().statusCode(503)
                                .header("Retry-After", "1").contentType(startsWith("application/problem+json"))
                                .body("detail", containsString("Redis refused delayq's credentials (")));
                Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).untilAsserted(() ->
                        given().get("/q/health/ready").then().statusCode(503)
                                .body("checks.find { it.name == 'delayq-redis-credentials' }.status", equalTo("DOWN"))
                                .body("checks.find { it.name == 'delayq-redis-credentials' }.data.reason",
                                        containsString("Redis refused delayq's credentials (")));
                given().get("/q/health/ready").then().body(not(containsString("ProbePass42")));
                assertEquals(0L, admin.num("EXISTS", Topics.keys(topic) + "jobs"));
            } finally {
                admin.call("CONFIG", "SET", "requirepass", "");
            }
        }
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).until(() -> given()
                .contentType(ContentType.JSON).body(body).post("/jobs").statusCode() == 201);
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> given()
                .get("/q/health/ready").then().body("checks.find { it.name == 'delayq-redis-credentials' }.status",
                        equalTo("UP")));
    }

    /** Every client but {@code admin} disconnected: the service's next commands open new connections. */
    private static void dropTheServicesConnections(Resp admin) {
        admin.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
        admin.call("CLIENT", "KILL", "TYPE", "pubsub", "SKIPME", "yes");
    }
}
