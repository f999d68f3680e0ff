package io.delayq.ui;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.net.URL;
import java.time.Duration;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.TopicControl;
import io.delayq.support.Browser;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/** The topic page's max-in-flight control in a real headless Chromium: set, shown on the overview, cleared. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DashboardMaxInFlightBrowserTest {
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    @TestHTTPResource("/")
    URL base;

    @Inject
    TopicControl control;

    @Test
    void anOperatorSetsAndClearsTheCapOnTheTopicPage() {
        String topic = Topics.fresh("ui-cap");
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"c1\",\"delayMs\":3600000}")
                .post("/jobs").then().statusCode(201);
        try (Browser b = new Browser(base.toString()).open("/delayq/topics/" + topic)) {
            b.await(PATIENCE, x -> x.find("#topic-body [data-col='max-in-flight']").getText().equals("max —"));
            b.find("#max-in-flight").sendKeys("4");
            b.find("#set-max-in-flight").click();
            b.driver.switchTo().alert().accept(); // the confirmation says what it will do
            b.await(PATIENCE, x -> x.find(".msg").getText().contains("capped " + topic + " at 4"));
            b.await(PATIENCE, x -> x.find("#topic-body [data-col='max-in-flight']").getText()
                    .equals("max 0/4 in flight (api)"));
            assertEquals(4, control.flow(topic).maxInFlight().max());
            b.screenshot("topic-max-in-flight");
            b.open("/delayq");
            b.await(PATIENCE, x -> !x.all("tr[data-topic='" + topic + "']").isEmpty());
            assertEquals("0/4 in flight (api)",
                    b.find("tr[data-topic='" + topic + "'] td[data-col='max-in-flight']").getText());
            b.open("/delayq/topics/" + topic);
            b.find("#clear-max-in-flight").click();
            b.driver.switchTo().alert().accept();
            b.await(PATIENCE, x -> x.find("#topic-body [data-col='max-in-flight']").getText().equals("max —"));
            assertNull(control.flow(topic).maxInFlight());
        }
    }
}
