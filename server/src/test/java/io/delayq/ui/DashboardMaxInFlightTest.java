package io.delayq.ui;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.matchesRegex;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.TopicControl;
import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/** The concurrency cap on the dashboard: "3/5 in flight" on the overview row, set and clear on the topic page. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DashboardMaxInFlightTest {
    @Inject
    TopicControl control;

    @Test
    void theOverviewRowShowsJobsInFlightAgainstTheCapAndTheTopicPageSetsAndClearsIt() {
        String topic = Topics.fresh("ui-cap");
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"c1\",\"delayMs\":3600000}")
                .post("/jobs").then().statusCode(201);
        control.setMaxInFlight(topic, 5);
        try (Resp redis = RedisTestResource.resp()) {
            // Three leases as a replica's take would leave them (no replica serves this topic).
            redis.call("ZADD", Topics.keys(topic) + "inflight", "1", "x", "2", "y", "3", "z");
        }
        given().get("/delayq").then().statusCode(200)
                .body(matchesRegex("(?s).*data-topic=\"" + topic + "\">(?:(?!</tr>).)*3/5 in flight \\(api\\).*"));
        given().get("/delayq/topics/" + topic).then().statusCode(200).body(containsString("max 3/5 in flight (api)"))
                .body(containsString("id=\"set-max-in-flight\"")).body(containsString("id=\"clear-max-in-flight\""));

        given().formParam("max", "7").post("/delayq/topics/" + topic + "/max-in-flight").then().statusCode(403);
        given().header("X-Delayq-UI", "1").formParam("max", "7").post("/delayq/topics/" + topic + "/max-in-flight")
                .then().statusCode(200).body(containsString("capped " + topic + " at 7"))
                .body(containsString("max 3/7 in flight (api)"));
        assertEquals(7, control.flow(topic).maxInFlight().max());
        given().header("X-Delayq-UI", "1").formParam("max", "many").post("/delayq/topics/" + topic + "/max-in-flight")
                .then().statusCode(200).body(containsString("a whole number of jobs"));
        given().header("X-Delayq-UI", "1").formParam("max", "0").post("/delayq/topics/" + topic + "/max-in-flight")
                .then().statusCode(200).body(containsString("must be an integer from 1"));
        assertEquals(7, control.flow(topic).maxInFlight().max(), "a refused value changes nothing");
        given().header("X-Delayq-UI", "1").post("/delayq/topics/" + topic + "/max-in-flight/clear").then()
                .statusCode(200).body(containsString("no cap")).body(containsString("max —"));
        assertNull(control.flow(topic).maxInFlight());
        try (Resp redis = RedisTestResource.resp()) {
            redis.call("DEL", Topics.keys(topic) + "inflight");
        }
    }
}
