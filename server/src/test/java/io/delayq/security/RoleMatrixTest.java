package io.delayq.security;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.UnaryOperator;

import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;

/**
 * Every delayq endpoint called without credentials, by a user without a delayq role, by a viewer,
 * a producer and an operator (embedded users over HTTP Basic), and with the API token: 401 without
 * credentials, 403 below the endpoint's role, a success from the role up.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(SecuredProfile.class)
class RoleMatrixTest {
    /** The callers, weakest first, and how each signs its request. */
    enum Caller {
        NONE(r -> r), STRANGER(r -> r.auth().preemptive().basic("stranger", "s-pass")),
        VIEWER(r -> r.auth().preemptive().basic("viewer", "v-pass")),
        PRODUCER(r -> r.auth().preemptive().basic("producer", "p-pass")),
        OPERATOR(r -> r.auth().preemptive().basic("operator", "o-pass")),
        TOKEN(r -> r.header("Authorization", "Bearer " + SecuredProfile.TOKEN));

        final UnaryOperator<RequestSpecification> sign;

        Caller(UnaryOperator<RequestSpecification> sign) {
            this.sign = sign;
        }

        /** The status this caller gets from an endpoint that needs {@code role}, when it is allowed: {@code ok}. */
        int expect(DelayqRole role, int ok) {
            return switch (this) {
                case NONE -> 401;
                case STRANGER -> 403;
                case VIEWER -> role == DelayqRole.VIEWER ? ok : 403;
                case PRODUCER -> role == DelayqRole.OPERATOR ? 403 : ok;
                case OPERATOR, TOKEN -> ok;
            };
        }
    }

    /** One endpoint: its role, the status of a successful call, and the call (on fresh data each time). */
    record Endpoint(String name, DelayqRole role, int ok, Function<RequestSpecification, Response> call) {
    }

    private final String topic = Topics.fresh("matrix");

    private List<Endpoint> endpoints() {
        List<Endpoint> all = new ArrayList<>();
        all.add(new Endpoint("POST /jobs", DelayqRole.PRODUCER, 201,
                r -> r.contentType(ContentType.JSON).body(job(fresh())).post("/jobs")));
        all.add(new Endpoint("POST /jobs/batch", DelayqRole.PRODUCER, 200,
                r -> r.contentType(ContentType.JSON).body("[" + job(fresh()) + "]").post("/jobs/batch")));
        all.add(new Endpoint("GET /jobs/{topic}/{id}", DelayqRole.VIEWER, 200,
                r -> r.get("/jobs/" + topic + "/" + scheduled())));
        all.add(new Endpoint("DELETE /jobs/{topic}/{id}", DelayqRole.PRODUCER, 204,
                r -> r.delete("/jobs/" + topic + "/" + scheduled())));
        all.add(new Endpoint("GET /topics", DelayqRole.VIEWER, 200, r -> r.get("/topics")));
        all.add(new Endpoint("GET /topics/{topic}/dead", DelayqRole.VIEWER, 200, r -> r.get("/topics/" + topic + "/dead")));
        all.add(new Endpoint("GET /topics/{topic}/history", DelayqRole.VIEWER, 200,
                r -> r.get("/topics/" + topic + "/history")));
        all.add(new Endpoint("GET /history", DelayqRole.VIEWER, 200, r -> r.get("/history?minutes=5")));
        all.add(new Endpoint("POST /topics/{topic}/dead/{id}/requeue", DelayqRole.OPERATOR, 200,
                r -> r.post("/topics/" + topic + "/dead/" + dead() + "/requeue")));
        all.add(new Endpoint("DELETE /topics/{topic}/dead/{id}", DelayqRole.OPERATOR, 204,
                r -> r.delete("/topics/" + topic + "/dead/" + dead())));
        all.add(new Endpoint("GET /topics/{topic}/dead?idPrefix=&error=", DelayqRole.VIEWER, 200,
                r -> r.get("/topics/" + topic + "/dead?idPrefix=m-&error=boom")));
        all.add(new Endpoint("POST /topics/{topic}/dead/requeue", DelayqRole.OPERATOR, 200,
                r -> r.contentType(ContentType.JSON).body("{\"idPrefix\":\"" + dead() + "\"}")
                        .post("/topics/" + topic + "/dead/requeue")));
        all.add(new Endpoint("POST /topics/{topic}/dead/purge", DelayqRole.OPERATOR, 200,
                r -> r.contentType(ContentType.JSON).body("{\"idPrefix\":\"" + dead() + "\"}")
                        .post("/topics/" + topic + "/dead/purge")));
        all.add(new Endpoint("GET /topics/{topic}/jobs", DelayqRole.VIEWER, 200,
                r -> r.get("/topics/" + topic + "/jobs?idPrefix=m-&limit=5")));
        all.add(new Endpoint("POST /topics/{topic}/jobs/cancel", DelayqRole.OPERATOR, 200,
                r -> r.contentType(ContentType.JSON).body("{\"idPrefix\":\"" + scheduled() + "\"}")
                        .post("/topics/" + topic + "/jobs/cancel")));
        all.add(new Endpoint("POST /topics/{topic}/jobs/reschedule", DelayqRole.OPERATOR, 200,
                r -> r.contentType(ContentType.JSON).body("{\"idPrefix\":\"" + scheduled() + "\",\"delayMs\":60000}")
                        .post("/topics/" + topic + "/jobs/reschedule")));
        all.add(new Endpoint("DELETE /topics/{topic}", DelayqRole.OPERATOR, 204, r -> r.delete("/topics/" + known())));
        all.add(new Endpoint("PUT /topics/{topic}/max-in-flight", DelayqRole.OPERATOR, 200,
                r -> r.contentType(ContentType.JSON).body("{\"max\":5}").put("/topics/" + topic + "/max-in-flight")));
        all.add(new Endpoint("DELETE /topics/{topic}/max-in-flight", DelayqRole.OPERATOR, 200,
                r -> r.delete("/topics/" + topic + "/max-in-flight")));
        all.add(new Endpoint("PUT /topics/{topic}/group-rate-limit", DelayqRole.OPERATOR, 200,
                r -> r.contentType(ContentType.JSON).body("{\"perSecond\":5}").put("/topics/" + topic + "/group-rate-limit")));
        all.add(new Endpoint("DELETE /topics/{topic}/group-rate-limit", DelayqRole.OPERATOR, 200,
                r -> r.delete("/topics/" + topic + "/group-rate-limit")));
        all.add(new Endpoint("GET /schedules", DelayqRole.VIEWER, 200, r -> r.get("/schedules")));
        all.add(new Endpoint("GET /schedules/{name}", DelayqRole.VIEWER, 200, r -> r.get("/schedules/test-nightly")));
        all.add(new Endpoint("PUT /schedules/{name}", DelayqRole.OPERATOR, 201,
                r -> r.contentType(ContentType.JSON).body(schedule()).put("/schedules/" + fresh())));
        all.add(new Endpoint("DELETE /schedules/{name}", DelayqRole.OPERATOR, 204, r -> r.delete("/schedules/" + saved())));
        all.add(new Endpoint("POST /schedules/{name}/trigger", DelayqRole.OPERATOR, 201,
                r -> r.post("/schedules/test-nightly/trigger")));
        all.add(new Endpoint("POST /schedules/{name}/pause", DelayqRole.OPERATOR, 200,
                r -> r.post("/schedules/" + saved() + "/pause")));
        all.add(new Endpoint("POST /schedules/{name}/resume", DelayqRole.OPERATOR, 200,
                r -> r.post("/schedules/" + saved() + "/resume")));
        all.add(new Endpoint("POST /schedules/{name}/backfill", DelayqRole.OPERATOR, 200,
                r -> r.contentType(ContentType.JSON).body("{\"from\":\"2026-06-01T00:00:00Z\",\"to\":\"2026-06-01T02:00:00Z\"}")
                        .post("/schedules/" + saved() + "/backfill")));
        return all;
    }

    @Test
    void everyEndpointAnswersEachCallerAsItsRoleSays() {
        List<String> wrong = new ArrayList<>();
        for (Endpoint e : endpoints()) {
            assertEquals(e.role(), AccessRules.required(e.name().split(" ")[0], e.name().split(" ")[1]),
                    e.name() + " in AccessRules");
            for (Caller c : Caller.values()) {
                Response reply = e.call().apply(c.sign.apply(given()));
                int expected = c.expect(e.role(), e.ok());
                if (reply.statusCode() != expected) {
                    wrong.add(e.name() + " as " + c + ": " + reply.statusCode() + " (expected " + expected + ") "
                            + reply.body().asString());
                } else if (expected == 401 || expected == 403) {
                    assertTrue(reply.contentType().startsWith("application/problem+json"), e.name() + " as " + c);
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    @Test
    void withoutCredentialsTheReplyIsAProblemWithBothChallenges() {
        given().get("/topics").then().statusCode(401).contentType(startsWith("application/problem+json"))
                .body("status", equalTo(401)).body("field", equalTo("Authorization"))
                .body("detail", containsString("delayq-viewer"));
        List<String> challenges = given().get("/topics").headers().getValues("WWW-Authenticate");
        assertTrue(challenges.stream().anyMatch(h -> h.equalsIgnoreCase("Basic realm=\"delayq\"")), challenges.toString());
        assertTrue(challenges.contains("Bearer realm=\"delayq\""), challenges.toString());
    }

    @Test
    void belowTheRoleTheReplyIsAProblemNamingIt() {
        given().auth().preemptive().basic("viewer", "v-pass").post("/topics/" + topic + "/dead/x/requeue").then()
                .statusCode(403).contentType(startsWith("application/problem+json")).body("status", equalTo(403))
                .body("detail", containsString("delayq-operator"));
    }

    @Test
    void aRefusedEnqueueWritesNothing() {
        String t = Topics.fresh("refused");
        String body = "{\"topic\":\"" + t + "\",\"id\":\"a\"}";
        given().contentType(ContentType.JSON).body(body).post("/jobs").then().statusCode(401);
        given().auth().preemptive().basic("viewer", "v-pass").contentType(ContentType.JSON).body(body).post("/jobs")
                .then().statusCode(403);
        given().header("Authorization", "Bearer wrong").contentType(ContentType.JSON).body(body).post("/jobs").then()
                .statusCode(401);
        given().auth().preemptive().basic("producer", "wrong").contentType(ContentType.JSON).body(body).post("/jobs")
                .then().statusCode(401);
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.countKeys("dq:{" + t + "*"));
        }
    }

    @Test
    void theServicesOwnEndpointsKeepTheirOwnRules() {
        // Health and metrics are not delayq's REST API: no role needed.
        given().get("/q/health/ready").then().statusCode(200);
        given().get("/q/openapi").then().statusCode(200).body(containsString("/jobs"));
        given().auth().preemptive().basic("stranger", "s-pass").get("/q/health/live").then().statusCode(200);
    }

    @Test
    void aRoleOfAnotherNameCanBeMappedToDelayqs() {
        given().auth().preemptive().basic("mapped", "m-pass").contentType(ContentType.JSON).body(job(fresh()))
                .post("/jobs").then().statusCode(201);
        given().auth().preemptive().basic("mapped", "m-pass").post("/schedules/test-nightly/trigger").then()
                .statusCode(403);
    }

    @Test
    void theTokenIsAnOperator() {
        given().header("Authorization", "Bearer " + SecuredProfile.TOKEN).get("/topics").then().statusCode(200);
    }

    private static String fresh() {
        return Topics.fresh("m");
    }

    private String job(String id) {
        return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"delayMs\":3600000}";
    }

    private String schedule() {
        return "{\"every\":\"1h\",\"topic\":\"" + topic + "\"}";
    }

    /** A scheduled job, made with the token. */
    private String scheduled() {
        String id = fresh();
        given().header("Authorization", "Bearer " + SecuredProfile.TOKEN).contentType(ContentType.JSON).body(job(id))
                .post("/jobs").then().statusCode(201);
        return id;
    }

    /** A known topic with no jobs (paused with the token). */
    private static String known() {
        String t = Topics.fresh("forget");
        given().header("Authorization", "Bearer " + SecuredProfile.TOKEN).post("/topics/" + t + "/pause").then()
                .statusCode(200);
        return t;
    }

    /** A REST schedule, made with the token. */
    private String saved() {
        String name = fresh();
        given().header("Authorization", "Bearer " + SecuredProfile.TOKEN).contentType(ContentType.JSON).body(schedule())
                .put("/schedules/" + name).then().statusCode(201);
        return name;
    }

    /** A dead job, written straight into Redis as the fail script leaves one. */
    private String dead() {
        String id = fresh();
        long now = System.currentTimeMillis();
        try (Resp redis = RedisTestResource.resp()) {
            redis.str("HSET", Topics.keys(topic) + "jobs", id, Long.toString(now, 36) + ",1,1,boom\n{}");
            redis.num("ZADD", Topics.keys(topic) + "dead", Long.toString(now), id);
        }
        return id;
    }

    /** OPTIONS is a read: the probe's anonymous OPTIONS answered 200 with Allow where GET answered 401. */
    @Test
    void optionsNeedsWhatGetNeeds() {
        String id = scheduled();
        for (String path : new String[] { "/jobs/" + topic + "/" + id, "/jobs", "/topics", "/delayq", "/schedules" }) {
            Caller.NONE.sign.apply(given()).options(path).then().statusCode(401)
                    .contentType(startsWith("application/problem+json")).header("Allow", org.hamcrest.Matchers.nullValue());
            Caller.STRANGER.sign.apply(given()).options(path).then().statusCode(403);
            Caller.VIEWER.sign.apply(given()).options(path).then().statusCode(200);
        }
        Caller.VIEWER.sign.apply(given()).options("/jobs/" + topic + "/" + id).then().header("Allow", containsString("GET"));
        // A path trick matches nothing (404): no Allow either.
        Caller.NONE.sign.apply(given()).options("/jobs;jsessionid=x").then()
                .statusCode(org.hamcrest.Matchers.not(200)).header("Allow", org.hamcrest.Matchers.nullValue());
    }
}
