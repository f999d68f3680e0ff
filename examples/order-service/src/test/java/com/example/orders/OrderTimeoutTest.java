package com.example.orders;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.Jobs;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/** Orders close when unpaid after {@code orders.payment-timeout} (2 s in tests), and only then. */
@QuarkusTest
class OrderTimeoutTest {
    private static final Duration PATIENCE = Duration.ofSeconds(15);

    @Inject
    CloseJobProbe probe;

    @Inject
    Jobs jobs;

    @Test
    void unpaidOrderIsClosedOnceWhenThePaymentTimeoutPasses() {
        String id = place();

        await().atMost(PATIENCE).until(() -> state(id).equals("CLOSED"));
        // The job is acknowledged after its observers return; once it is gone from Redis it
        // cannot be delivered again, so the count below is final.
        await().atMost(PATIENCE).until(() -> jobs.get(OrderTimeouts.TOPIC, id).isEmpty());
        assertEquals(1, probe.deliveries(id));
    }

    @Test
    void paidOrderIsNeverClosedBecausePayingCancelsItsCloseJob() {
        String paid = place();
        given().post("/orders/{id}/pay", paid).then().statusCode(200);
        assertTrue(jobs.get(OrderTimeouts.TOPIC, paid).isEmpty(), "the close job of a paid order is cancelled");

        // No sleeping: an order placed after the paid one is due after it, so once this one has
        // closed, the paid order's job would have run already had it survived the payment.
        String later = place();
        await().atMost(PATIENCE).until(() -> state(later).equals("CLOSED"));
        assertEquals("PAID", state(paid));
        assertEquals(0, probe.deliveries(paid));
    }

    @Test
    void payingAnOrderThatClosedUnpaidIsAConflict() {
        String id = place();
        await().atMost(PATIENCE).until(() -> state(id).equals("CLOSED"));

        given().post("/orders/{id}/pay", id).then().statusCode(409);
        assertEquals("CLOSED", state(id));
    }

    static String place() {
        return given().contentType(ContentType.JSON).body("{\"item\":\"book\",\"amount\":12.5}")
                .post("/orders")
                .then().statusCode(201).body("state", equalTo("PENDING"))
                .extract().path("id");
    }

    static String state(String id) {
        return given().get("/orders/{id}", id).then().statusCode(200).extract().path("state");
    }
}
