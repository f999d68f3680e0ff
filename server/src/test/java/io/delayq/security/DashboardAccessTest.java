package io.delayq.security;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalToIgnoringCase;

import org.junit.jupiter.api.Test;

import io.delayq.support.RedisTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.RestAssured;

/**
 * The dashboard with embedded users over HTTP Basic: a page asks the browser to sign in, a viewer
 * sees it, its form actions need the role of the API call they make, and a form posted from
 * another site is refused.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(SecuredProfile.class)
class DashboardAccessTest {
    private static final String PAGE = "/delayq/test-dashboard";

    @Test
    void aPageAsksTheBrowserToSignInAndShowsToAViewer() {
        given().get(PAGE).then().statusCode(401).header("WWW-Authenticate", equalToIgnoringCase("basic realm=\"delayq\""));
        given().auth().preemptive().basic("stranger", "s-pass").get(PAGE).then().statusCode(403);
        given().auth().preemptive().basic("viewer", "v-pass").get(PAGE).then().statusCode(200)
                .body(containsString("<form"));
    }

    @Test
    void aFormActionNeedsItsRoleAndTheSameOrigin() {
        given().auth().preemptive().basic("viewer", "v-pass").formParam("topic", "t").post(PAGE + "/pause").then()
                .statusCode(403);
        given().auth().preemptive().basic("operator", "o-pass").header("Sec-Fetch-Site", "same-origin")
                .formParam("topic", "t").post(PAGE + "/pause").then().statusCode(200).body(containsString("paused t"));
        given().auth().preemptive().basic("operator", "o-pass").header("Origin", "http://localhost:" + RestAssured.port)
                .formParam("topic", "t").post(PAGE + "/pause").then().statusCode(200);
        given().auth().preemptive().basic("operator", "o-pass").header("Sec-Fetch-Site", "cross-site")
                .formParam("topic", "t").post(PAGE + "/pause").then().statusCode(403);
        given().auth().preemptive().basic("operator", "o-pass").header("Origin", "https://evil.example")
                .formParam("topic", "t").post(PAGE + "/pause").then().statusCode(403);
    }
}
