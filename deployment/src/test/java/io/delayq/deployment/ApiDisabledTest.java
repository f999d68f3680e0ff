package io.delayq.deployment;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.startsWith;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.quarkus.test.QuarkusUnitTest;

/**
 * {@code delayq.api.enabled=false}: delayq's REST API is gone, so the service may use
 * {@code /jobs} itself; its own errors are not turned into delayq's problem bodies.
 */
class ApiDisabledTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClass(OwnJobs.class))
            .overrideConfigKey("delayq.api.enabled", "false");

    @Path("/jobs")
    public static class OwnJobs {
        @GET
        public String list() {
            return "the service's own jobs";
        }

        @POST
        public String fail() {
            throw new IllegalStateException("the service's own failure");
        }
    }

    @Test
    void theServiceOwnsJobsAndDelayqsTopicsAreGone() {
        given().get("/jobs").then().statusCode(200).body(equalTo("the service's own jobs"));
        given().get("/topics").then().statusCode(404);
    }

    @Test
    void theServicesOwnErrorsKeepTheirOwnShape() {
        given().post("/jobs").then().statusCode(500).contentType(not(startsWith("application/problem+json")));
    }
}
