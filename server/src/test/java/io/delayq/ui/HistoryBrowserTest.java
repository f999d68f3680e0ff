package io.delayq.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.time.Duration;
import java.util.List;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;
import org.openqa.selenium.WebElement;

import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.ops.HistoryRecorder;
import io.delayq.support.Browser;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;

/** One replica's history charts in a real headless Chromium (HistoryIT does several replicas). */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class HistoryBrowserTest {
    @TestHTTPResource("/")
    URL base;
    @Inject
    Jobs jobs;
    @Inject
    HistoryRecorder recorder;

    private static long enqueuedIn(List<WebElement> minutes) {
        return minutes.stream().mapToLong(r -> Long.parseLong(r.getAttribute("data-enqueued"))).sum();
    }

    @Test
    void theTopicPageAndTheOverviewChartWhatThisReplicaFlushed() {
        String topic = "hist-ui"; // configured here (per-topic history is kept for this replica's topics); only this test uses it
        String ids = Topics.fresh("j");
        for (int i = 0; i < 3; i++) {
            jobs.schedule(JobRequest.topic(topic).id(ids + i).delay(Duration.ofHours(1)));
        }
        recorder.flush();
        try (Browser b = new Browser(base.toString()).open("/delayq/topics/" + topic)) {
            b.await(Duration.ofSeconds(20), x -> !x.all("#history svg.counts rect.minute").isEmpty());
            assertEquals(3, enqueuedIn(b.all("#history svg.counts rect.minute")), "this topic's 3 jobs");
            assertTrue(b.find("#history svg.counts rect.minute title").getAttribute("textContent").contains("3 enqueued"));
            b.open("/delayq");
            b.await(Duration.ofSeconds(20), x -> !x.all("#history svg.counts rect.minute").isEmpty());
            assertTrue(enqueuedIn(b.all("#history svg.counts rect.minute")) >= 3, "the total holds them");
            b.find("#history-day").click();
            b.await(Duration.ofSeconds(20), x -> "1440".equals(x.find("#history").getAttribute("data-minutes")));
            assertTrue(enqueuedIn(b.all("#history svg.counts rect.minute")) >= 3, "over 24 hours too");
        }
    }
}
