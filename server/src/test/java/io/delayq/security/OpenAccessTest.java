package io.delayq.security;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.RestAssured;
import io.restassured.http.ContentType;
import io.restassured.specification.RequestSpecification;

/**
 * With no credential of any kind configured (the server's embedded realm is on, but has no user;
 * no token) delayq's endpoints are open: anyone may call every one, as in dev mode.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class OpenAccessTest {
    @Inject
    AccessMode mode;

    @Test
    void withNothingConfiguredEveryEndpointIsOpen() {
        assertTrue(mode.open());
        String topic = Topics.fresh("open");
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"a\",\"delayMs\":60000}")
                .post("/jobs").then().statusCode(201);
        given().get("/jobs/" + topic + "/a").then().statusCode(200);
        given().get("/topics").then().statusCode(200);
        given().delete("/jobs/" + topic + "/a").then().statusCode(204);
        given().contentType(ContentType.JSON).body("{\"every\":\"1h\",\"topic\":\"" + topic + "\"}")
                .put("/schedules/" + topic).then().statusCode(201);
        given().delete("/schedules/" + topic).then().statusCode(204);
        given().post("/topics/" + topic + "/dead/x/requeue").then().statusCode(404);
    }

    @Test
    void evenOpenTheApiRefusesCrossSiteRequests() {
        String topic = Topics.fresh("open");
        given().header("Sec-Fetch-Site", "cross-site").contentType(ContentType.JSON)
                .body("{\"topic\":\"" + topic + "\"}").post("/jobs").then().statusCode(403);
        given().header("Origin", "https://evil.example").post("/schedules/test-nightly/trigger").then().statusCode(403);
    }

    /** What a page on evil.example sends once its name points at this server (DNS rebinding). */
    private static RequestSpecification rebound() {
        String origin = "http://evil.example:" + RestAssured.port;
        return given().header("Host", "evil.example:" + RestAssured.port).header("Origin", origin)
                .header("Sec-Fetch-Site", "same-origin");
    }

    @Test
    void openItRefusesAHostItDoesNotAnswerTo() {
        String topic = Topics.fresh("rebind");
        rebound().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"a\",\"delayMs\":60000}")
                .post("/jobs").then().statusCode(403).contentType(startsWith("application/problem+json"))
                .body("detail", containsString("Host evil.example is not one of delayq.http.allowed-hosts"));
        rebound().post("/delayq/topics/" + topic + "/pause").then().statusCode(403);
        // Reads too: a rebinding page could otherwise read every payload.
        rebound().get("/topics").then().statusCode(403);
        rebound().get("/delayq").then().statusCode(403);
        rebound().get("/delayq/find?q=" + topic + "/a").then().statusCode(403);
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + topic + "*"));
        }
    }

    @Test
    void localhostNamesAndIpAddressesPass() {
        String topic = Topics.fresh("hosts");
        for (String host : new String[] { "localhost", "LOCALHOST.", "app.localhost", "127.0.0.1", "[::1]", "10.1.2.3" }) {
            given().header("Host", host + ":" + RestAssured.port).get("/topics").then().statusCode(200);
        }
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"a\",\"delayMs\":60000}")
                .post("/jobs").then().statusCode(201);
        // The find box's redirect is a path: never built from the Host the request named.
        given().header("Host", "127.0.0.1:" + RestAssured.port).redirects().follow(false)
                .get("/delayq/find?q=" + topic + "/a").then().statusCode(303)
                .header("Location", "/delayq/job?topic=" + topic + "&id=a");
    }
}
