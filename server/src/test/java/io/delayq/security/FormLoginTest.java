package io.delayq.security;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.endsWith;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import io.delayq.support.RedisTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.RestAssured;
import io.restassured.response.Response;

/**
 * Form login for the dashboard (quarkus.http.auth.form.*): a page redirects to the login form, the
 * session cookie is SameSite=Strict, the API still answers 401 problems (and takes HTTP Basic).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(FormLoginProfile.class)
class FormLoginTest {
    private static final String PAGE = "/delayq/test-dashboard";

    @Test
    void aPageRedirectsToTheLoginFormAndTheSessionCarriesTheRole() {
        given().redirects().follow(false).get(PAGE).then().statusCode(302)
                .header("Location", endsWith("/delayq/login.html"));
        Response login = given().redirects().follow(false).formParam("j_username", "operator")
                .formParam("j_password", "o-pass").post("/j_security_check");
        String cookie = login.getCookie("quarkus-credential");
        assertNotNull(cookie, login.headers().toString());
        String setCookie = login.header("Set-Cookie");
        assertTrue(setCookie.toLowerCase().contains("samesite=strict") && setCookie.toLowerCase().contains("httponly"),
                setCookie);
        given().cookie("quarkus-credential", cookie).get(PAGE).then().statusCode(200);
        given().cookie("quarkus-credential", cookie).header("Origin", "http://localhost:" + RestAssured.port)
                .formParam("topic", "t").post(PAGE + "/pause").then().statusCode(200).body(containsString("paused t"));
        given().cookie("quarkus-credential", cookie).header("Sec-Fetch-Site", "cross-site").formParam("topic", "t")
                .post(PAGE + "/pause").then().statusCode(403);
    }

    @Test
    void theApiAnswersAProblemNotARedirect() {
        given().redirects().follow(false).get("/topics").then().statusCode(401)
                .contentType(startsWith("application/problem+json"));
        given().auth().preemptive().basic("viewer", "v-pass").get("/topics").then().statusCode(200);
    }
}
