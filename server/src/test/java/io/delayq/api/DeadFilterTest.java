package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/**
 * {@code GET /topics/{t}/dead?idPrefix=&error=} and {@code POST /topics/{t}/dead/requeue} /
 * {@code /purge} with a filter body: exactly the matching dead jobs are listed, requeued or
 * purged, the others stay dead, a job whose death is after the call began is left alone, and bad
 * input is a 400 naming the field. Dead jobs are written into Redis as the fail script leaves
 * them (no observer serves these topics, so a requeued job stays scheduled to be looked at).
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DeadFilterTest {

    @Test
    void theListIsFilteredByIdPrefixAndByErrorTextWithoutCase() {
        String t = Topics.fresh("dead-filter");
        long now = System.currentTimeMillis();
        bury(t, "order-1", "Timeout calling the shop", now - 5000);
        bury(t, "order-2", "HTTP 500 from the shop", now - 4000);
        bury(t, "user-1", "connect timeout", now - 3000);
        bury(t, "order-3", "TIMEOUT again", now - 2000);

        assertEquals(List.of("order-3", "order-2", "order-1"), ids(t, "?idPrefix=order-"));
        assertEquals(List.of("order-3", "user-1", "order-1"), ids(t, "?error=timeout"));
        assertEquals(List.of("order-3", "order-1"), ids(t, "?idPrefix=order-&error=TimeOut"));
        assertEquals(List.of("order-3"), ids(t, "?idPrefix=order-&error=timeout&limit=1"));
        assertEquals(List.of(), ids(t, "?error=no+such+error"));
        // Empty parameters are no filter, as the old list was.
        assertEquals(List.of("order-3", "user-1", "order-2", "order-1"), ids(t, "?idPrefix=&error="));
        given().get("/topics/" + t + "/dead?error=shop").then().statusCode(200)
                .header(TopicsResource.TRUNCATED, nullValue())
                .body("[0].id", equalTo("order-2")).body("[0].lastError", equalTo("HTTP 500 from the shop"))
                .body("[0].payload", equalTo("{\"n\":1}"));
    }

    @Test
    void requeueActsOnExactlyTheFilteredJobs() {
        String t = Topics.fresh("dead-requeue");
        long now = System.currentTimeMillis();
        bury(t, "order-1", "Timeout calling the shop", now - 5000);
        bury(t, "order-2", "HTTP 500", now - 4000);
        bury(t, "user-1", "timeout", now - 3000);
        bury(t, "order-3", "timeout again", now - 2000);

        given().contentType(ContentType.JSON).body("{\"idPrefix\":\"order-\",\"error\":\"timeout\"}")
                .post("/topics/" + t + "/dead/requeue").then().statusCode(200).body("requeued", equalTo(2));

        given().get("/jobs/" + t + "/order-1").then().statusCode(200).body("state", equalTo("scheduled"))
                .body("attempts", equalTo(0));
        given().get("/jobs/" + t + "/order-3").then().statusCode(200).body("state", equalTo("scheduled"));
        given().get("/jobs/" + t + "/order-2").then().statusCode(200).body("state", equalTo("dead"));
        given().get("/jobs/" + t + "/user-1").then().statusCode(200).body("state", equalTo("dead"));
        assertEquals(List.of("user-1", "order-2"), ids(t, ""));
        // Again: nothing is left that matches.
        given().contentType(ContentType.JSON).body("{\"idPrefix\":\"order-\",\"error\":\"timeout\"}")
                .post("/topics/" + t + "/dead/requeue").then().statusCode(200).body("requeued", equalTo(0));
    }

    @Test
    void purgeActsOnExactlyTheFilteredJobs() {
        String t = Topics.fresh("dead-purge");
        long now = System.currentTimeMillis();
        bury(t, "a-1", "boom", now - 3000);
        bury(t, "a-2", "bang", now - 2000);
        bury(t, "b-1", "boom", now - 1000);

        given().contentType(ContentType.JSON).body("{\"error\":\"BOOM\"}").post("/topics/" + t + "/dead/purge").then()
                .statusCode(200).body("purged", equalTo(2));

        given().get("/jobs/" + t + "/a-1").then().statusCode(404);
        given().get("/jobs/" + t + "/b-1").then().statusCode(404);
        given().get("/jobs/" + t + "/a-2").then().statusCode(200).body("state", equalTo("dead"));
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(1L, redis.num("ZCARD", Topics.keys(t) + "dead"));
            assertEquals(1L, redis.num("HLEN", Topics.keys(t) + "jobs"));
        }
    }

    @Test
    void noBodyOrAnEmptyObjectMeansEveryDeadJob() {
        String t = Topics.fresh("dead-all");
        long now = System.currentTimeMillis();
        bury(t, "x-1", "e", now - 2000);
        bury(t, "y-1", "f", now - 1000);
        given().contentType(ContentType.JSON).body("{}").post("/topics/" + t + "/dead/requeue").then().statusCode(200)
                .body("requeued", equalTo(2));

        String u = Topics.fresh("dead-all");
        bury(u, "x-1", "e", now - 2000);
        bury(u, "y-1", "f", now - 1000);
        given().post("/topics/" + u + "/dead/purge").then().statusCode(200).body("purged", equalTo(2));
        assertEquals(List.of(), ids(u, ""));
    }

    @Test
    void aJobThatDiedAfterTheCallBeganIsNotTouched() {
        // A death recorded after the Redis time the call read first (here: an hour from now, as if it
        // died while the walk went on) is not the call's: the walk stops before it.
        String t = Topics.fresh("dead-later");
        long now = System.currentTimeMillis();
        bury(t, "early", "boom", now - 1000);
        bury(t, "later", "boom", now + 3_600_000);
        given().contentType(ContentType.JSON).body("{\"error\":\"boom\"}").post("/topics/" + t + "/dead/requeue").then()
                .statusCode(200).body("requeued", equalTo(1));
        given().get("/jobs/" + t + "/later").then().statusCode(200).body("state", equalTo("dead"));
        given().post("/topics/" + t + "/dead/purge").then().statusCode(200).body("purged", equalTo(0));
        given().get("/jobs/" + t + "/later").then().statusCode(200).body("state", equalTo("dead"));
    }

    @Test
    void badFiltersAreA400NamingTheField() {
        String t = Topics.fresh("dead-bad");
        bury(t, "keep", "boom", System.currentTimeMillis() - 1000);
        String dead = "/topics/" + t + "/dead";
        given().get(dead + "?limit=0").then().statusCode(400).body("field", equalTo("limit"));
        given().get(dead + "?limit=1001").then().statusCode(400).body("field", equalTo("limit"));
        given().get(dead + "?limit=x&idPrefix=a").then().statusCode(400).body("field", equalTo("limit"));
        given().get(dead + "?idPrefix=a%20b").then().statusCode(400).body("field", equalTo("idPrefix"))
                .body("detail", containsString("idPrefix must match"));
        given().get(dead + "?idPrefix=" + "a".repeat(129)).then().statusCode(400).body("field", equalTo("idPrefix"));
        given().get(dead + "?error=" + "e".repeat(501)).then().statusCode(400).body("field", equalTo("error"));
        for (String action : List.of("requeue", "purge")) {
            String url = dead + "/" + action;
            given().contentType(ContentType.JSON).body("{\"error\":5}").post(url).then().statusCode(400)
                    .body("field", equalTo("error")).body("detail", containsString("must be a string"));
            given().contentType(ContentType.JSON).body("{\"idPrefix\":[\"a\"]}").post(url).then().statusCode(400)
                    .body("field", equalTo("idPrefix"));
            given().contentType(ContentType.JSON).body("{\"idPrefix\":\"a/b\"}").post(url).then().statusCode(400)
                    .body("field", equalTo("idPrefix"));
            given().contentType(ContentType.JSON).body("{\"error\":\"boom\"} {}").post(url).then().statusCode(400)
                    .body("field", equalTo("body")).body("detail", containsString("exactly one JSON value"));
            given().contentType(ContentType.JSON).body("{\"ids\":[\"keep\"]}").post(url).then().statusCode(400)
                    .body("field", equalTo("ids"));
            given().contentType(ContentType.JSON).body("[]").post(url).then().statusCode(400).body("field", equalTo("body"));
            given().contentType(ContentType.JSON).body("{\"error\":").post(url).then().statusCode(400)
                    .body("field", equalTo("body"));
            given().contentType(ContentType.TEXT).body("{}").post(url).then().statusCode(415);
        }
        // Nothing was touched by any of them.
        given().get("/jobs/" + t + "/keep").then().statusCode(200).body("state", equalTo("dead"));
    }

    @Test
    void theSingleJobEndpointsAreUnchanged() {
        String t = Topics.fresh("dead-one");
        bury(t, "one", "boom", System.currentTimeMillis() - 2000);
        bury(t, "two", "boom", System.currentTimeMillis() - 1000);
        given().post("/topics/" + t + "/dead/one/requeue").then().statusCode(200).body("state", equalTo("scheduled"));
        given().delete("/topics/" + t + "/dead/two").then().statusCode(204);
        given().delete("/topics/" + t + "/dead/two").then().statusCode(404);
        given().get("/topics/" + t + "/dead?limit=5").then().statusCode(200).body("size()", equalTo(0));
    }

    private static List<String> ids(String topic, String query) {
        return given().get("/topics/" + topic + "/dead" + query).then().statusCode(200).extract().jsonPath()
                .getList("id", String.class);
    }

    /** A dead job as fail.lua leaves one: 3 attempts, the error, payload {"n":1}, died at {@code diedAt}. */
    static void bury(String topic, String id, String error, long diedAt) {
        try (Resp redis = RedisTestResource.resp()) {
            redis.num("HSET", Topics.keys(topic) + "jobs", id, Long.toString(diedAt - 60_000, 36) + ",3,3," + error
                    + "\n{\"n\":1}");
            redis.num("ZADD", Topics.keys(topic) + "dead", Long.toString(diedAt), id);
            redis.num("SADD", "dq:topics", topic);
        }
    }
}
