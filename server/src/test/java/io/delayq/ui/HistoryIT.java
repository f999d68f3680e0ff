package io.delayq.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.WebElement;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.Browser;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * The history over replica processes sharing one Redis: a run of known shape (15 jobs enqueued
 * in one minute, 6 succeeding the next minute, 4 succeeding and 5 failing the minute after) over
 * two replicas, one of them restarted in between. The replicas flush only every 10 minutes here,
 * so what they counted reaches Redis by their flush at shutdown: the figures prove the sum over
 * replicas and the restart. A third replica's dashboard then draws exactly those minutes, and
 * while it idles its history costs Redis no command.
 */
class HistoryIT extends OwnRedisTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static Map<String, String> serving(String topic, Receiver receiver, String flush) {
        Map<String, String> s = new HashMap<>();
        s.put("delayq.topics." + topic + ".http.url", receiver.url("r"));
        s.put("delayq.topics." + topic + ".max-attempts", "1");
        s.put("delayq.history.flush-interval", flush);
        return s;
    }

    private static String jobs(String topic, String prefix, int n, long runAtMs) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < n; i++) {
            b.append(i == 0 ? "" : ",").append("{\"topic\":\"").append(topic).append("\",\"id\":\"").append(prefix).append(i)
                    .append("\",\"runAt\":\"").append(Instant.ofEpochMilli(runAtMs)).append("\"}");
        }
        return b.append(']').toString();
    }

    private static long redisMs(Resp redis) {
        List<Object> t = redis.list("TIME");
        return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000;
    }

    private static Map<String, Long> commandCalls(Resp redis) {
        Map<String, Long> calls = new HashMap<>();
        for (String line : redis.str("INFO", "commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                String n = line.substring(line.indexOf("calls=") + 6);
                calls.put(name, Long.parseLong(n.substring(0, n.indexOf(','))));
            }
        }
        return calls;
    }

    /** The figures of one minute of a chart (its rect.minute), null when the chart has none for it. */
    private static Map<String, String> minute(Browser b, String chart, Instant minute) {
        for (WebElement r : b.all("#history svg." + chart + " rect.minute")) {
            if (minute.toString().equals(r.getAttribute("data-minute"))) {
                return Map.of("enqueued", r.getAttribute("data-enqueued"), "succeeded", r.getAttribute("data-succeeded"),
                        "failed", r.getAttribute("data-failed"), "p99", r.getAttribute("data-lateness-p99-ms"));
            }
        }
        return null;
    }

    @Test
    void twoReplicasAndARestartAddUpPerMinuteAndTheChartsShowThoseMinutes() throws Exception {
        String topic = Topics.fresh("hist");
        try (Receiver receiver = new Receiver(); Resp resp = new Resp(redis.port())) {
            receiver.failBy(d -> d.id().startsWith("f"));
            AppProcess a = AppProcess.start("hist-a", redis.port(), serving(topic, receiver, "10m"));
            AppProcess b = AppProcess.start("hist-b", redis.port(), serving(topic, receiver, "10m"));
            long now = redisMs(resp);
            if (now % 60_000 > 40_000) { // enqueue well inside one minute
                long next = now - now % 60_000 + 60_000;
                Awaitility.await().atMost(Duration.ofSeconds(25)).until(() -> redisMs(resp) >= next + 500);
                now = redisMs(resp);
            }
            long m0 = now - now % 60_000, m1 = m0 + 60_000, m2 = m1 + 60_000;
            HttpResponse<String> r = a.post("/jobs/batch", jobs(topic, "ok-a", 6, m1 + 3_000));
            assertEquals(200, r.statusCode(), r.body());
            r = a.post("/jobs/batch", jobs(topic, "ok-b", 4, m2 + 3_000));
            assertEquals(200, r.statusCode(), r.body());
            r = b.post("/jobs/batch", jobs(topic, "f", 5, m2 + 3_000));
            assertEquals(200, r.statusCode(), r.body());
            r = b.post("/jobs/batch", jobs(topic, "f", 1, m2 + 3_000)); // f0 again: kept, not a new job
            assertEquals(200, r.statusCode(), r.body());

            Awaitility.await().atMost(Duration.ofSeconds(150)).until(() -> receiver.completed.size() >= 6);
            a.terminate(); // SIGTERM: drained, its counts flushed at shutdown
            assertTrue(a.waitForExit(Duration.ofSeconds(30)), "a exits");
            AppProcess a2 = AppProcess.start("hist-a2", redis.port(), serving(topic, receiver, "10m"));
            Awaitility.await().atMost(Duration.ofSeconds(150))
                    .until(() -> receiver.completed.size() >= 10 && receiver.deliveries.keySet().stream()
                            .filter(id -> id.startsWith("f")).count() >= 5);
            // the failures' outcomes are recorded once the target answered: wait for the dead set
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> JSON.readTree(b.get("/topics")).findValues("dead")
                    .stream().mapToLong(JsonNode::asLong).sum() >= 5);
            for (AppProcess app : List.of(b, a2)) {
                app.terminate();
                assertTrue(app.waitForExit(Duration.ofSeconds(30)), app + " exits");
            }

            AppProcess c = AppProcess.start("hist-c", redis.port(), serving(topic, receiver, "1s"));
            try {
                JsonNode history = JSON.readTree(c.get("/topics/" + topic + "/history?minutes=5"));
                Map<Instant, JsonNode> byMinute = new HashMap<>();
                history.forEach(m -> byMinute.put(Instant.parse(m.get("minute").asText()), m));
                JsonNode at0 = byMinute.get(Instant.ofEpochMilli(m0)), at1 = byMinute.get(Instant.ofEpochMilli(m1)),
                        at2 = byMinute.get(Instant.ofEpochMilli(m2));
                assertEquals(15, at0.get("enqueued").asLong(), history.toString());
                assertEquals(6, at1.get("succeeded").asLong(), history.toString());
                assertEquals(0, at1.get("failed").asLong(), history.toString());
                assertEquals(4, at2.get("succeeded").asLong(), history.toString());
                assertEquals(5, at2.get("failed").asLong(), history.toString());
                assertTrue(at2.get("latenessP99Ms").isNumber(), history.toString());
                JsonNode total = JSON.readTree(c.get("/history?minutes=5"));
                total.forEach(m -> {
                    if (m.get("minute").asText().equals(Instant.ofEpochMilli(m2).toString())) {
                        assertEquals(5, m.get("failed").asLong(), "one topic here: the total is its figures");
                    }
                });

                try (Browser browser = new Browser(c.baseUrl())) {
                    for (String page : List.of("/delayq/topics/" + topic, "/delayq")) {
                        browser.open(page);
                        browser.await(Duration.ofSeconds(20), x -> !x.all("#history svg.counts rect.minute").isEmpty());
                        assertEquals(Map.of("enqueued", "15", "succeeded", "0", "failed", "0", "p99", ""),
                                minute(browser, "counts", Instant.ofEpochMilli(m0)), page);
                        assertEquals("6", minute(browser, "counts", Instant.ofEpochMilli(m1)).get("succeeded"), page);
                        Map<String, String> two = minute(browser, "counts", Instant.ofEpochMilli(m2));
                        assertEquals("4", two.get("succeeded"), page);
                        assertEquals("5", two.get("failed"), page);
                        assertEquals(at2.get("latenessP99Ms").asText(), two.get("p99"), page);
                        assertTrue(!browser.all("#history svg.lateness rect.p99").isEmpty(), "lateness bars");
                    }
                    browser.find("#history-day").click();
                    browser.await(Duration.ofSeconds(20), x -> "1440".equals(x.find("#history").getAttribute("data-minutes")));
                    assertEquals("5", minute(browser, "counts", Instant.ofEpochMilli(m2)).get("failed"), "24 hours too");
                    browser.find("#history-hour").click();
                    browser.await(Duration.ofSeconds(20), x -> "60".equals(x.find("#history").getAttribute("data-minutes")));
                    browser.open("/delayq/topics/" + topic);
                    browser.await(Duration.ofSeconds(20), x -> !x.all("#history svg.counts rect.minute").isEmpty());
                    browser.driver.executeScript("document.getElementById('history').scrollIntoView()");
                    Path shot = browser.screenshot("history");
                    Path docs = Path.of("..", "docs", "images");
                    Files.createDirectories(docs);
                    Files.copy(shot, docs.resolve("dashboard-history.png"), StandardCopyOption.REPLACE_EXISTING);
                }

                // Idle with history on (flushing every second): no history command at all.
                Map<String, Long> before = commandCalls(resp);
                Thread.sleep(10_000); // a measurement window, not a synchronisation
                Map<String, Long> after = commandCalls(resp);
                assertEquals(before.getOrDefault("expireat", 0L), after.getOrDefault("expireat", 0L),
                        "no history script ran in 10 idle flushes");
                long all = after.entrySet().stream().filter(e -> !e.getKey().equals("info"))
                        .mapToLong(e -> e.getValue() - before.getOrDefault(e.getKey(), 0L)).sum();
                System.out.printf("idle replica with history on: %d Redis commands in 10 s (%s)%n", all, after);
            } finally {
                c.close();
            }
        }
    }
}
