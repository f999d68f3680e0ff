package io.delayq.ui;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.time.Duration;
import java.time.Instant;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.WebElement;

import io.delayq.core.JobState;
import io.delayq.store.Inspection;
import io.delayq.support.Browser;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import jakarta.inject.Inject;

/** The dashboard in a real headless Chromium; each test leaves screenshots in target/screenshots. */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DashboardBrowserTest {
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    @TestHTTPResource("/")
    URL base;

    @Inject
    Inspection store;

    private static void enqueue(String json) {
        given().contentType(ContentType.JSON).body(json).post("/jobs").then().statusCode(201);
    }

    private static String cell(Browser b, String topic, String col) {
        return b.find("tr[data-topic='" + topic + "'] td[data-col='" + col + "']").getText();
    }

    @Test
    void theOverviewListsATopicWithItsCounts() {
        String topic = Topics.fresh("ui-counts");
        for (int i = 0; i < 3; i++) {
            enqueue("{\"topic\":\"" + topic + "\",\"id\":\"later-" + i + "\",\"delayMs\":" + (3_600_000 * (i + 1)) + "}");
        }
        enqueue("{\"topic\":\"" + topic + "\",\"id\":\"due\",\"runAt\":\"2026-01-01T00:00:00Z\"}"); // no replica serves it
        try (Browser b = new Browser(base.toString()).open("/delayq")) {
            b.await(PATIENCE, x -> !x.all("tr[data-topic='" + topic + "']").isEmpty());
            assertEquals("4", cell(b, topic, "scheduled"));
            assertEquals("1", cell(b, topic, "due"));
            assertEquals("0", cell(b, topic, "inflight"));
            assertEquals("0", cell(b, topic, "dead"));
            b.screenshot("overview");
            // It refreshes itself: a job enqueued now shows without a reload.
            enqueue("{\"topic\":\"" + topic + "\",\"id\":\"later-9\",\"delayMs\":60000}");
            b.await(PATIENCE, x -> cell(x, topic, "scheduled").equals("5"));
            b.find("tr[data-topic='" + topic + "'] a").click();
            b.await(PATIENCE, x -> x.find("#topic-body [data-col='scheduled']").getText().equals("5"));
            long bars = b.all(".timeline .bar").size();
            assertEquals(24, bars, "a 24-hour timeline");
            b.screenshot("topic");
            // On a phone: the page fits the screen's width (wide tables scroll inside their box).
            b.driver.manage().window().setSize(new org.openqa.selenium.Dimension(390, 844));
            Object overflow = b.driver.executeScript(
                    "return document.documentElement.scrollWidth - document.documentElement.clientWidth;");
            assertEquals(0L, ((Number) overflow).longValue(), "no sideways scrolling of the page on a phone");
            b.screenshot("topic-phone");
        }
    }

    @Test
    void theJobBrowserPagesThroughAFilteredTopicAndCancelsARow() {
        String topic = Topics.fresh("ui-browse");
        for (int i = 0; i < JobPages.PAGE + 5; i++) {
            enqueue("{\"topic\":\"" + topic + "\",\"id\":\"p-" + (100 + i) + "\",\"delayMs\":" + (3_600_000 + i * 1000) + "}");
        }
        enqueue("{\"topic\":\"" + topic + "\",\"id\":\"other\",\"delayMs\":3600500}");
        try (Browser b = new Browser(base.toString()).open("/delayq/topics/" + topic)) {
            b.find("#browse-jobs").click();
            b.await(PATIENCE, x -> x.all("#jobs tbody tr").size() == JobPages.PAGE);
            b.find("#jobs-filter input[name='idPrefix']").sendKeys("p-");
            b.find("#jobs-filter-apply").click();
            b.await(PATIENCE, x -> x.driver.getCurrentUrl().contains("idPrefix=p-") && !x.all("#jobs-next").isEmpty());
            assertEquals("p-100", b.all("#jobs tbody tr").get(0).getAttribute("data-id"), "runAt order");
            assertTrue(b.all("#jobs tbody tr[data-id='other']").isEmpty(), "filtered");
            b.find("#jobs-next").click();
            b.await(PATIENCE, x -> x.all("#jobs tbody tr").size() == 5 && !x.all("#jobs-end").isEmpty());
            assertEquals("p-150", b.all("#jobs tbody tr").get(0).getAttribute("data-id"));
            b.screenshot("job-browser-second-page");
            b.find("#jobs tbody tr[data-id='p-154'] button.danger").click();
            b.driver.switchTo().alert().accept(); // "Cancel job p-154? It will not run."
            b.await(PATIENCE, x -> x.find("#jobs-msg").getText().contains("cancelled p-154"));
            assertTrue(store.get(topic, "p-154").isEmpty());
        }
    }

    @Test
    void requeueingADeadJobRunsItAndTheDeadCountDrops() {
        UiObservers.FAIL.set(true);
        String id = "dead-" + System.nanoTime();
        enqueue("{\"topic\":\"ui-dead\",\"id\":\"" + id + "\",\"maxAttempts\":1,\"payload\":{\"n\":1}}");
        Awaitility.await().atMost(PATIENCE)
                .until(() -> store.get("ui-dead", id).map(j -> j.state() == JobState.DEAD).orElse(false));
        UiObservers.FAIL.set(false);
        long deadBefore = store.gauges("ui-dead")[2];
        try (Browser b = new Browser(base.toString()).open("/delayq/topics/ui-dead")) {
            WebElement row = b.find("tr[data-id='" + id + "']");
            assertTrue(row.getText().contains("<b>not bold</b>"), "the error shows as text: " + row.getText());
            b.screenshot("dead-before-requeue");
            row.findElement(org.openqa.selenium.By.xpath(".//button[text()='Requeue']")).click();
            b.driver.switchTo().alert().accept(); // the confirmation says what it will do
            b.await(PATIENCE, x -> x.find(".msg").getText().contains("requeued " + id));
            Awaitility.await().atMost(PATIENCE).until(() -> UiObservers.RUNS.get(id).get() == 2);
            Awaitility.await().atMost(PATIENCE).until(() -> store.get("ui-dead", id).isEmpty());
            b.await(PATIENCE, x -> Long.parseLong(x.find("#topic-body [data-col='dead']").getText()) == deadBefore - 1);
            b.screenshot("dead-after-requeue");
        }
    }

    @Test
    void pauseStopsDispatchOfADueJobUntilResume() {
        String id = "paused-" + System.nanoTime();
        try (Browser b = new Browser(base.toString()).open("/delayq/topics/ui-run")) {
            b.find("#pause").click();
            b.driver.switchTo().alert().accept();
            b.await(PATIENCE, x -> x.find("#topic-body [data-col='state']").getText().equals("paused"));
            enqueue("{\"topic\":\"ui-run\",\"id\":\"" + id + "\"}"); // due now
            b.await(PATIENCE, x -> !x.all("tr[data-id='" + id + "']").isEmpty()); // listed as due, not taken
            Awaitility.await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(3))
                    .until(() -> !UiObservers.RUNS.containsKey(id));
            assertEquals(JobState.SCHEDULED, store.get("ui-run", id).orElseThrow().state());
            b.screenshot("paused-with-a-due-job");
            b.find("#resume").click();
            b.driver.switchTo().alert().accept();
            Awaitility.await().atMost(PATIENCE).until(() -> UiObservers.RUNS.containsKey(id));
            b.await(PATIENCE, x -> x.find("#topic-body [data-col='state']").getText().equals("running"));
            assertEquals(1, UiObservers.RUNS.get(id).get());
            b.screenshot("resumed");
        }
    }

    @Test
    void aScriptInAPayloadShowsAsTextAndRunsNothing() {
        String topic = Topics.fresh("ui-xss");
        enqueue("{\"topic\":\"" + topic + "\",\"id\":\"xss\",\"delayMs\":600000,"
                + "\"payload\":\"<script>alert(1)</script><img src=x onerror=alert(2)>\"}");
        try (Browser b = new Browser(base.toString()).open("/delayq/topics/" + topic)) {
            assertTrue(b.find("tr[data-id='xss']").getText().contains("<script>alert(1)</script>"));
            assertThrows(NoAlertPresentException.class, () -> b.driver.switchTo().alert());
            b.open("/delayq/job?topic=" + topic + "&id=xss");
            assertTrue(b.find("#payload").getText().contains("<script>alert(1)</script><img src=x onerror=alert(2)>"));
            assertThrows(NoAlertPresentException.class, () -> b.driver.switchTo().alert());
            assertEquals(0, b.all("#payload script, #payload img").size(), "no element made of the payload");
            b.screenshot("payload-as-text");
        }
    }
}
