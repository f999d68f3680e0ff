package io.delayq.security;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.restassured.RestAssured;
import io.restassured.http.ContentType;
import io.restassured.specification.RequestSpecification;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;

/**
 * A browser's request on behalf of another site is refused, however well signed in its user is:
 * Sec-Fetch-Site must be same-origin (or none), else Origin must be this host.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(SecuredProfile.class)
class CrossSiteRequestTest {
    private final String topic = Topics.fresh("csrf");

    private RequestSpecification operator() {
        return given().auth().preemptive().basic("operator", "o-pass");
    }

    private String job(String id) {
        return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"delayMs\":60000}";
    }

    @Test
    void aSignedInBrowserCannotBeMadeToChangeAnythingFromAnotherSite() {
        operator().header("Sec-Fetch-Site", "cross-site").contentType(ContentType.JSON).body(job("a")).post("/jobs")
                .then().statusCode(403).contentType(startsWith("application/problem+json"))
                .body("detail", containsString("cross-site"));
        operator().header("Sec-Fetch-Site", "same-site").contentType(ContentType.JSON).body(job("a")).post("/jobs")
                .then().statusCode(403);
        operator().header("Origin", "https://evil.example").contentType(ContentType.JSON).body(job("a")).post("/jobs")
                .then().statusCode(403);
        operator().header("Origin", "null").contentType(ContentType.JSON).body(job("a")).post("/jobs").then()
                .statusCode(403);
        // A body-less action (what a cross-site form or no-cors fetch could send) is refused as well.
        operator().header("Sec-Fetch-Site", "cross-site").post("/schedules/test-nightly/trigger").then().statusCode(403);
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + topic + "*"));
        }
    }

    @Test
    void theSameOriginAndNonBrowserClientsPass() {
        operator().header("Sec-Fetch-Site", "same-origin").contentType(ContentType.JSON).body(job("b")).post("/jobs")
                .then().statusCode(201);
        operator().header("Origin", "http://localhost:" + RestAssured.port).contentType(ContentType.JSON)
                .body(job("c")).post("/jobs").then().statusCode(201);
        operator().contentType(ContentType.JSON).body(job("d")).post("/jobs").then().statusCode(201);
        // A bearer token is never added by a browser on its own: a cross-origin caller holding it is no forgery.
        given().header("Authorization", "Bearer " + SecuredProfile.TOKEN).header("Sec-Fetch-Site", "cross-site")
                .contentType(ContentType.JSON).body(job("e")).post("/jobs").then().statusCode(201);
        // Reads change nothing.
        operator().header("Sec-Fetch-Site", "cross-site").get("/jobs/" + topic + "/b").then().statusCode(200);
    }

    /**
     * With credentials configured and no delayq.http.allowed-hosts, the Host is not checked (a
     * rebinding page has no credential to send; a deployment reached by its own name keeps
     * working), but nothing is built from it: the find box redirects to a path.
     */
    @Test
    void securedTheHostIsNotCheckedAndNoRedirectRepeatsIt() {
        String id = "found-" + System.nanoTime();
        operator().contentType(ContentType.JSON).body(job(id)).post("/jobs").then().statusCode(201);
        operator().header("Host", "delayq.internal:" + RestAssured.port).redirects().follow(false)
                .get("/delayq/find?q=" + topic + "/" + id).then().statusCode(303)
                .header("Location", "/delayq/job?topic=" + topic + "&id=" + id);
        given().header("Host", "evil.example:" + RestAssured.port).get("/topics").then().statusCode(401);
    }
}
