package io.delayq.ui;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.openqa.selenium.Alert;
import org.openqa.selenium.WebElement;

import io.delayq.support.Browser;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;

/**
 * The dead-list filter, "Requeue filtered" and the "Find job" box in a real headless Chromium
 * (screenshots in target/screenshots; the README's come from here). The topic is served by no
 * observer, so a requeued job stays scheduled to be looked at.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DeadFilterBrowserTest {
    private static final Duration PATIENCE = Duration.ofSeconds(20);
    /** Rows of the dead list (those with a last error; the next-due rows have none). */
    private static final String DEAD_ROWS = "#topic-body tr[data-id]:has(td.bad)";

    @TestHTTPResource("/")
    URL base;

    @Test
    void aFilteredRequeueActsOnExactlyTheListedJobs() {
        String t = Topics.fresh("ui-dead-filter");
        long now = System.currentTimeMillis();
        DeadFilterPagesTest.bury(t, "order-1001", "Read timed out calling https://shop.example/api", now - 6000);
        DeadFilterPagesTest.bury(t, "order-1002", "HTTP 500 from https://shop.example/api", now - 5000);
        DeadFilterPagesTest.bury(t, "order-1003", "Read TIMED OUT calling https://shop.example/api", now - 4000);
        DeadFilterPagesTest.bury(t, "invoice-77", "Read timed out calling https://billing.example", now - 3000);
        DeadFilterPagesTest.bury(t, "order-1004", "payload rejected: missing customer", now - 2000);
        try (Browser b = new Browser(base.toString()).open("/delayq/topics/" + t)) {
            assertEquals(5, b.all(DEAD_ROWS).size());
            b.find("#dead-filter input[name='idPrefix']").sendKeys("order-");
            b.find("#dead-filter input[name='error']").sendKeys("timed out");
            b.find("#dead-filter-apply").click();
            b.await(PATIENCE, x -> !x.all("#requeue-filtered").isEmpty());
            assertEquals(List.of("order-1003", "order-1001"), listed(b));
            assertEquals("Requeue filtered (2)", b.find("#requeue-filtered").getText());
            assertEquals("Purge filtered (2)", b.find("#purge-filtered").getText());
            // The 3 s refresh keeps the filter (and what was typed).
            b.await(PATIENCE, x -> x.find("#dead-filter-count").getText().startsWith("2 dead job(s)"));
            showDeadList(b);
            b.screenshot("dashboard-dead-filter");

            b.find("#requeue-filtered").click();
            Alert confirm = b.driver.switchTo().alert();
            assertTrue(confirm.getText().contains("Requeue the 2 dead job(s) of " + t), confirm.getText());
            confirm.accept();
            b.await(PATIENCE, x -> x.find(".msg").getText().startsWith("requeued 2 dead job(s)"));
            b.await(PATIENCE, x -> x.all(DEAD_ROWS).isEmpty());
            showDeadList(b);
            b.screenshot("dashboard-dead-filter-requeued");
        }
        for (String id : List.of("order-1001", "order-1003")) {
            given().get("/jobs/" + t + "/" + id).then().statusCode(200).body("state", equalTo("scheduled"));
        }
        for (String id : List.of("order-1002", "invoice-77", "order-1004")) {
            given().get("/jobs/" + t + "/" + id).then().statusCode(200).body("state", equalTo("dead"));
        }
    }

    @Test
    void theHeaderBoxFindsAJobByIdAcrossTopics() {
        String t = Topics.fresh("ui-find");
        String id = "invoice-" + System.nanoTime();
        DeadFilterPagesTest.bury(t, id, "HTTP 503 from billing", System.currentTimeMillis());
        try (Browser b = new Browser(base.toString()).open("/delayq")) {
            WebElement box = b.find("#find-job input[name='q']");
            box.sendKeys(id);
            box.submit();
            b.await(PATIENCE, x -> x.find("h1").getText().contains(id));
            assertTrue(b.find("h1").getText().contains(t), "the job page of its topic: " + b.find("h1").getText());
            assertEquals("dead", b.find("[data-col='state']").getText());
            b.screenshot("dashboard-find-job");

            WebElement again = b.find("#find-job input[name='q']");
            again.sendKeys("no-such-job");
            again.submit();
            b.await(PATIENCE, x -> x.find("#find-result").getText().startsWith("No job no-such-job in any of the"));
            b.screenshot("dashboard-find-job-not-found");
        }
    }

    /** Scrolls the dead list's heading to the top of the window, for the screenshot. */
    private static void showDeadList(Browser b) {
        b.driver.executeScript("document.getElementById('dead-filter').previousElementSibling.scrollIntoView()");
    }

    private static List<String> listed(Browser b) {
        return b.all(DEAD_ROWS).stream().map(r -> r.getAttribute("data-id"))
                .filter(id -> id.startsWith("order-") || id.startsWith("invoice-")).toList();
    }
}
