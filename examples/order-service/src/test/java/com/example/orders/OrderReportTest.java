package com.example.orders;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.startsWith;

import java.time.Duration;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.quarkus.test.junit.QuarkusTest;

/** The recurring report: declared in application.properties, run now through delayq's /schedules API. */
@QuarkusTest
class OrderReportTest {
    @Inject
    OrderReport report;

    @Test
    void theHourlyReportIsDeclaredAndRunsWhenTriggered() {
        given().get("/schedules/order-report").then().statusCode(200).body("source", equalTo("config"))
                .body("cron", equalTo("0 0 * * * ?")).body("topic", equalTo(OrderReport.TOPIC))
                .body("nextTick", startsWith("20"));
        String id = given().post("/schedules/order-report/trigger").then().statusCode(201)
                .body("topic", equalTo(OrderReport.TOPIC)).extract().path("id");
        await().atMost(Duration.ofSeconds(15)).until(() -> report.last() != null && report.last().startsWith(id + " "));
    }
}
