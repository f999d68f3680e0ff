package io.delayq.security;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertTrue;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

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
}
