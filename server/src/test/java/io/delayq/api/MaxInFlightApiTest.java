package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.InvalidJobException;
import io.delayq.core.TopicControl;
import io.delayq.core.TopicFlow;
import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;

/**
 * The concurrency cap over REST and {@link TopicControl}: PUT and DELETE
 * {@code /topics/{topic}/max-in-flight}, what GET /topics shows, the rules of the body.
 * "cap-config" has {@code delayq.topics.cap-config.max-in-flight=2} in the test configuration.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class MaxInFlightApiTest {
    @Inject
    TopicControl control;

    static Response putCap(String topic, String body) {
        return given().contentType(ContentType.JSON).body(body).put("/topics/" + topic + "/max-in-flight");
    }

    static String inTopics(String topic, String field) {
        return "find { it.topic == '" + topic + "' }." + field;
    }

    @Test
    void putSetsTheCapGetTopicsShowsItWithTheJobsInFlightAndDeleteClearsIt() {
        String topic = Topics.fresh("cap-rest");
        putCap(topic, "{\"max\": 5}").then().statusCode(200).body("topic", equalTo(topic))
                .body("maxInFlight.max", equalTo(5)).body("maxInFlight.source", equalTo("api"))
                .body("maxInFlight.inflight", equalTo(0)).body("paused", equalTo(false));
        given().get("/topics").then().statusCode(200).body(inTopics(topic, "maxInFlight.max"), equalTo(5))
                .body(inTopics(topic, "maxInFlight.source"), equalTo("api"))
                .body(inTopics(topic, "maxInFlight.inflight"), equalTo(0));
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals("5", redis.str("GET", Topics.keys(topic) + "maxinflight"), "kept in Redis");
            redis.call("ZADD", Topics.keys(topic) + "inflight", "1", "x", "2", "y");
        }
        assertEquals(new TopicFlow.MaxInFlight(5, TopicFlow.Source.API, 2), control.flow(topic).maxInFlight());
        given().get("/topics").then().body(inTopics(topic, "maxInFlight.inflight"), equalTo(2));
        given().delete("/topics/" + topic + "/max-in-flight").then().statusCode(200).body("maxInFlight", nullValue());
        given().get("/topics").then().body(inTopics(topic, "maxInFlight"), nullValue());
        try (Resp redis = RedisTestResource.resp()) {
            assertNull(redis.str("GET", Topics.keys(topic) + "maxinflight"));
            redis.call("DEL", Topics.keys(topic) + "inflight");
        }
    }

    @Test
    void theOperatorsCapWinsOverTheConfiguredOneUntilDeleted() {
        String topic = "cap-config";
        given().delete("/topics/" + topic + "/max-in-flight").then().statusCode(200)
                .body("maxInFlight.max", equalTo(2)).body("maxInFlight.source", equalTo("config"));
        putCap(topic, "{\"max\": 7}").then().statusCode(200).body("maxInFlight.max", equalTo(7))
                .body("maxInFlight.source", equalTo("api"));
        given().get("/topics").then().body(inTopics(topic, "maxInFlight.max"), equalTo(7));
        assertEquals(7, control.flow(topic).maxInFlight().max());
        given().delete("/topics/" + topic + "/max-in-flight").then().statusCode(200)
                .body("maxInFlight.max", equalTo(2)).body("maxInFlight.source", equalTo("config"));
        assertEquals(TopicFlow.Source.CONFIG, control.flow(topic).maxInFlight().source());
    }

    @Test
    void aBadCapIs400NamingTheFieldAndWritesNothing() {
        String topic = Topics.fresh("cap-rules");
        String[][] cases = {
                { "{}", "max" },
                { "{\"max\":null}", "max" },
                { "{\"max\":0}", "max" },
                { "{\"max\":-3}", "max" },
                { "{\"max\":2.5}", "max" },
                { "{\"max\":\"5\"}", "max" },
                { "{\"max\":true}", "max" },
                { "{\"max\":5000000000}", "max" },
                { "{\"max\":2000000}", "max" },
                { "{\"max\":5,\"per\":2}", "per" },
                { "[5]", "body" },
                { "{\"max\":", "body" },
                { "{\"max\":5}{\"max\":6}", "body" },
                { "{\"max\":5} x", "body" },
        };
        for (String[] c : cases) {
            putCap(topic, c[0]).then().statusCode(400).contentType("application/problem+json")
                    .body("field", equalTo(c[1]));
        }
        putCap(topic, "{\"max\":0}").then().body("detail", containsString("from 1"));
        given().body("{\"max\":5}").contentType("text/plain").put("/topics/" + topic + "/max-in-flight").then()
                .statusCode(415);
        putCap("No", "{\"max\":5}").then().statusCode(400).body("field", equalTo("topic"));
        given().delete("/topics/No/max-in-flight").then().statusCode(400).body("field", equalTo("topic"));
        assertNull(control.flow(topic).maxInFlight(), "nothing was set");
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.num("EXISTS", Topics.keys(topic) + "maxinflight"));
        }
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> control.setMaxInFlight(topic, 0));
        assertEquals("max", e.field());
    }

    @Test
    void aCapBelowThePartitionCountIsRefused() {
        assertEquals(null, TopicControl.brokenMaxInFlight(4, 4));
        assertEquals(null, TopicControl.brokenMaxInFlight(1, 1));
        String broken = TopicControl.brokenMaxInFlight(3, 4);
        org.junit.jupiter.api.Assertions.assertTrue(broken.contains("delayq.partitions is 4"), broken);
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> TopicControl.checkMaxInFlight("max", 3, 4));
        assertEquals("max", e.field());
    }
}
