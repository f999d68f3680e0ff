package com.example.orders;

import static com.example.orders.OrderTimeoutTest.place;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.ExtractableResponse;
import io.restassured.response.Response;

/** The orders API itself: placing, reading, paying, and what it refuses. */
@QuarkusTest
class OrderResourceTest {

    @Test
    void runsOnTheRedisOfDelayqsDevService() {
        SameRedisForEveryTestClass.check();
    }

    @Test
    void placedOrderIsPendingAndCanBeReadBack() {
        ExtractableResponse<Response> placed = given().contentType(ContentType.JSON)
                .body("{\"item\":\"book\",\"amount\":12.5}")
                .post("/orders")
                .then().statusCode(201).body("state", equalTo("PENDING"))
                .extract();
        String id = placed.path("id");
        assertTrue(placed.header("Location").endsWith("/orders/" + id));

        given().get("/orders/{id}", id).then().statusCode(200)
                .body("id", equalTo(id))
                .body("item", equalTo("book"))
                .body("amount", equalTo(12.5f))
                .body("placedAt", notNullValue());
    }

    @Test
    void payingTwiceLeavesTheOrderPaid() {
        String id = place();
        given().post("/orders/{id}/pay", id).then().statusCode(200).body("state", equalTo("PAID"));
        given().post("/orders/{id}/pay", id).then().statusCode(200).body("state", equalTo("PAID"));
    }

    @Test
    void unknownOrderIsNotFound() {
        given().get("/orders/{id}", "no-such-order").then().statusCode(404);
        given().post("/orders/{id}/pay", "no-such-order").then().statusCode(404);
    }

    @Test
    void orderWithoutItemOrPositiveAmountIsRejected() {
        given().contentType(ContentType.JSON).body("{\"amount\":12.5}").post("/orders").then().statusCode(400);
        given().contentType(ContentType.JSON).body("{\"item\":\"book\",\"amount\":0}").post("/orders").then().statusCode(400);
    }
}
