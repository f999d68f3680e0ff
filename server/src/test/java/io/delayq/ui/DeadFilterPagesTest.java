package io.delayq.ui;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.endsWith;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.not;

import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.RestAssured;

/**
 * The topic page's dead-list filter and its "Requeue filtered" / "Purge filtered" actions as HTML,
 * and the header's "Find job" box (the browser test drives both for real).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DeadFilterPagesTest {

    @Test
    void theFilteredListShowsOnlyMatchesWithTheirCountAndTheButtonsCarryTheFilter() {
        String t = Topics.fresh("ui-filter");
        long now = System.currentTimeMillis();
        bury(t, "order-1", "Read timed out", now - 3000);
        bury(t, "order-2", "HTTP 500", now - 2000);
        bury(t, "user-1", "read TIMED OUT", now - 1000);
        String page = given().get("/delayq/topics/" + t + "?idPrefix=order-&error=timed out").then().statusCode(200)
                .body(containsString("data-id=\"order-1\"")).body(not(containsString("data-id=\"order-2\"")))
                .body(not(containsString("data-id=\"user-1\"")))
                .body(containsString("Requeue filtered (1)")).body(containsString("Purge filtered (1)"))
                .body(containsString("dead/requeue-filtered?idPrefix=order-&amp;error=timed+out"))
                .body(containsString("fragment?idPrefix=order-&amp;error=timed+out"))
                .body(not(containsString("Requeue all dead")))
                .extract().asString();
        org.junit.jupiter.api.Assertions.assertTrue(page.contains("id starts with &#39;order-&#39; and last error contains "
                + "&#39;timed out&#39;") || page.contains("id starts with &#x27;order-&#x27;"), "the filter in words");
        // Unfiltered: every dead job and the "all" buttons, as before.
        given().get("/delayq/topics/" + t).then().statusCode(200).body(containsString("data-id=\"order-2\""))
                .body(containsString("Requeue all dead")).body(not(containsString("Requeue filtered")));
        given().get("/delayq/topics/" + t + "?idPrefix=a%20b").then().statusCode(400)
                .body(containsString("idPrefix must match"));
    }

    @Test
    void filteredActionsNeedTheDashboardHeaderAndActOnExactlyTheMatches() {
        String t = Topics.fresh("ui-filter-act");
        long now = System.currentTimeMillis();
        bury(t, "order-1", "Read timed out", now - 3000);
        bury(t, "order-2", "HTTP 500", now - 2000);
        bury(t, "user-1", "read timed out", now - 1000);
        String requeue = "/delayq/topics/" + t + "/dead/requeue-filtered?error=TIMED";
        given().post(requeue).then().statusCode(403);
        given().header("X-Delayq-UI", "1").header("Sec-Fetch-Site", "cross-site").post(requeue).then().statusCode(403);
        given().get("/jobs/" + t + "/order-1").then().body("state", equalTo("dead"));
        given().header("X-Delayq-UI", "1").post(requeue).then().statusCode(200)
                .body(containsString("requeued 2 dead job(s) whose last error contains"))
                // the refreshed body keeps the filter: nothing matches any more
                .body(containsString("No dead job matches."));
        given().get("/jobs/" + t + "/order-1").then().body("state", equalTo("scheduled"));
        given().get("/jobs/" + t + "/user-1").then().body("state", equalTo("scheduled"));
        given().get("/jobs/" + t + "/order-2").then().body("state", equalTo("dead"));
        given().header("X-Delayq-UI", "1").post("/delayq/topics/" + t + "/dead/purge-filtered?idPrefix=order-").then()
                .statusCode(200).body(containsString("purged 1 dead job(s) whose id starts with"));
        given().get("/jobs/" + t + "/order-2").then().statusCode(404);
        // A per-row action on a filtered page: the body it answers keeps the page's filter.
        bury(t, "x-1", "boom", now - 500);
        bury(t, "y-1", "boom", now - 400);
        given().header("X-Delayq-UI", "1")
                .header("HX-Current-URL", RestAssured.baseURI + ":" + RestAssured.port + "/delayq/topics/" + t + "?idPrefix=y-")
                .post("/delayq/topics/" + t + "/dead/y-1/purge").then().statusCode(200)
                .body(containsString("purged y-1")).body(not(containsString("data-id=\"x-1\"")))
                .body(containsString("No dead job matches."));
    }

    @Test
    void theFindBoxGoesToTheOneJobWithThatIdAcrossTopics() {
        String a = Topics.fresh("ui-find-a");
        String b = Topics.fresh("ui-find-b");
        String only = "only-" + System.nanoTime();
        String both = "both-" + System.nanoTime();
        long now = System.currentTimeMillis();
        bury(a, only, "boom", now);
        bury(a, both, "boom", now);
        bury(b, both, "boom", now);
        RestAssured.given().redirects().follow(false).get("/delayq/find?q=" + only).then().statusCode(303)
                .header("Location", endsWith("/delayq/job?topic=" + a + "&id=" + only));
        RestAssured.given().redirects().follow(false).get("/delayq/find?q=" + b + "/" + both).then().statusCode(303)
                .header("Location", endsWith("/delayq/job?topic=" + b + "&id=" + both));
        given().get("/delayq/find?q=" + both).then().statusCode(200).body(containsString("2 topics hold a job " + both))
                .body(containsString("data-topic=\"" + a + "\"")).body(containsString("data-topic=\"" + b + "\""));
        given().get("/delayq/find?q=nobody-has-this").then().statusCode(404)
                .body(containsString("No job nobody-has-this in any of the"));
        given().get("/delayq/find?q=" + a + "/nobody-has-this").then().statusCode(404)
                .body(containsString("No job nobody-has-this in topic " + a));
        given().get("/delayq/find?q=bad%20id").then().statusCode(400).body(containsString("id must match"));
        given().get("/delayq/find?q=").then().statusCode(400).body(containsString("Type a job id"));
        // the header box on every page
        given().get("/delayq").then().body(containsString("id=\"find-job\"")).body(containsString("name=\"q\""));
    }

    /** A dead job as fail.lua leaves one, in a listed topic. */
    static void bury(String topic, String id, String error, long diedAt) {
        try (Resp redis = RedisTestResource.resp()) {
            redis.num("HSET", Topics.keys(topic) + "jobs", id, Long.toString(diedAt - 60_000, 36) + ",3,3," + error
                    + "\n{\"n\":1}");
            redis.num("ZADD", Topics.keys(topic) + "dead", Long.toString(diedAt), id);
            redis.num("SADD", "dq:topics", topic);
        }
    }
}
