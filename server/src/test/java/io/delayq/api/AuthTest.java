package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.Test;

import io.delayq.support.RedisTestResource;
import io.delayq.dev.Resp;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.http.ContentType;

/** delayq.api.token alone: the bearer token is an operator credential, and every call needs it. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(AuthTest.WithToken.class)
class AuthTest {
    public static class WithToken implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("delayq.api.token", "s3cret");
        }
    }

    @Test
    void everyCallNeedsTheBearerTokenAndWritesNothingWithout() {
        String topic = Topics.fresh("auth");
        String body = "{\"topic\":\"" + topic + "\",\"id\":\"a\"}";
        given().contentType(ContentType.JSON).body(body).post("/jobs").then().statusCode(401)
                .contentType(startsWith("application/problem+json")).body("field", equalTo("Authorization"));
        assertTrue(given().get("/topics").headers().getValues("WWW-Authenticate").contains("Bearer realm=\"delayq\""));
        given().contentType(ContentType.JSON).header("Authorization", "Bearer wrong").body(body).post("/jobs")
                .then().statusCode(401);
        given().contentType(ContentType.JSON).body("[" + body + "]").post("/jobs/batch").then().statusCode(401);
        given().delete("/jobs/" + topic + "/a").then().statusCode(401);
        given().get("/jobs/" + topic + "/a").then().statusCode(401);
        given().get("/topics").then().statusCode(401);
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + topic + "*"));
        }
        given().contentType(ContentType.JSON).header("Authorization", "Bearer s3cret").body(body).post("/jobs")
                .then().statusCode(201);
        given().header("Authorization", "bearer s3cret").get("/jobs/" + topic + "/a").then().statusCode(200);
        given().header("Authorization", "Bearer s3cret").get("/topics").then().statusCode(200)
                .body("topic", hasItem(topic));
        given().header("Authorization", "Bearer s3cret").post("/topics/" + topic + "/dead/a/requeue").then()
                .statusCode(404);
    }

    @Test
    void healthAndMetricsNeedNoToken() {
        given().get("/q/health/ready").then().statusCode(200);
        given().get("/q/metrics").then().statusCode(200);
    }
}
