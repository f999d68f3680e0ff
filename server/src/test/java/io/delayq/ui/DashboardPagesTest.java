package io.delayq.ui;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.matchesRegex;
import static org.hamcrest.Matchers.not;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.store.TopicAdmin;

import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/** The dashboard's pages as HTML (the browser tests drive them for real). */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DashboardPagesTest {
    @Inject
    TopicAdmin topicAdmin;

    @Test
    void pagesRenderEscapedAndActionsNeedTheDashboardHeader() {
        String topic = Topics.fresh("ui-pages");
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"x1\",\"delayMs\":3600000,"
                + "\"payload\":{\"html\":\"<script>alert(1)</script>\"}}").post("/jobs").then().statusCode(201);
        given().get("/delayq").then().statusCode(200).contentType(containsString("text/html"))
                .header("Content-Security-Policy", "frame-ancestors 'none'")
                .body(containsString("data-topic=\"" + topic + "\""));
        given().get("/delayq/topics/" + topic).then().statusCode(200)
                .body(containsString("&lt;script&gt;alert(1)&lt;/script&gt;"))
                .body(not(containsString("<script>alert(1)")));
        given().get("/delayq/job?topic=" + topic + "&id=x1").then().statusCode(200)
                .body(containsString("&lt;script&gt;"));
        given().get("/delayq/job?topic=" + topic + "&id=nope").then().statusCode(404);
        given().get("/webjars/htmx.org/2.0.8/dist/htmx.min.js").then().statusCode(200);
        given().post("/delayq/topics/" + topic + "/jobs/x1/cancel").then().statusCode(403);
        given().header("X-Delayq-UI", "1").header("Sec-Fetch-Site", "cross-site")
                .post("/delayq/topics/" + topic + "/jobs/x1/cancel").then().statusCode(403);
        given().header("X-Delayq-UI", "1").post("/delayq/topics/" + topic + "/jobs/x1/cancel").then().statusCode(200)
                .body(containsString("cancelled x1"));
    }

    @Test
    void aTopicHeldByItsTargetsRetryAfterShowsAsThrottledUntilThen() {
        String topic = Topics.fresh("ui-throttled");
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"t1\",\"delayMs\":3600000}")
                .post("/jobs").then().statusCode(201);
        topicAdmin.hold(topic, false, 60_000).toCompletionStage().toCompletableFuture().join();
        // In the topic's own row of the overview.
        given().get("/delayq").then().statusCode(200)
                .body(matchesRegex("(?s).*data-topic=\"" + topic + "\">(?:(?!</tr>).)*throttled until 20.*"));
        given().get("/delayq/topics/" + topic).then().statusCode(200).body(containsString("throttled until 20"));
    }
}
