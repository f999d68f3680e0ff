package io.delayq.ui;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.matchesRegex;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.store.TopicAdmin;

import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;

/** The dashboard's pages as HTML (the browser tests drive them for real). */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class DashboardPagesTest {
    @Inject
    io.delayq.store.RedisGateway redis;
    @Inject
    TopicAdmin topicAdmin;
    @Inject
    JobQueue queue;

    @Test
    void pagesRenderEscapedAndActionsNeedTheDashboardHeader() {
        String topic = Topics.fresh("ui-pages");
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"x1\",\"delayMs\":3600000,"
                + "\"payload\":{\"html\":\"<script>alert(1)</script>\"}}").post("/jobs").then().statusCode(201);
        given().get("/delayq").then().statusCode(200).contentType(containsString("text/html"))
                .header("Content-Security-Policy", "frame-ancestors 'none'")
                .body(containsString("data-topic=\"" + topic + "\""));
        given().get("/delayq/topics/" + topic).then().statusCode(200)
                .body(containsString("&lt;script&gt;alert(1)&lt;/script&gt;"))
                .body(not(containsString("<script>alert(1)")));
        given().get("/delayq/job?topic=" + topic + "&id=x1").then().statusCode(200)
                .body(containsString("&lt;script&gt;"));
        given().get("/delayq/job?topic=" + topic + "&id=nope").then().statusCode(404);
        given().get("/webjars/htmx.org/2.0.8/dist/htmx.min.js").then().statusCode(200);
        given().post("/delayq/topics/" + topic + "/jobs/x1/cancel").then().statusCode(403);
        given().header("X-Delayq-UI", "1").header("Sec-Fetch-Site", "cross-site")
                .post("/delayq/topics/" + topic + "/jobs/x1/cancel").then().statusCode(403);
        given().header("X-Delayq-UI", "1").post("/delayq/topics/" + topic + "/jobs/x1/cancel").then().statusCode(200)
                .body(containsString("cancelled x1"));
    }

    @Test
    void aJobsPageShowsItsOwnRetryBackoffAndNothingForAJobWithoutOne() {
        String topic = Topics.fresh("ui-job-retry");
        String[][] jobs = { { "own", ",\"retry\":{\"initialMs\":200,\"maxMs\":400}" },
                { "initial", ",\"retry\":{\"initialMs\":1500}" }, { "max", ",\"retry\":{\"maxMs\":90000}" },
                { "units", ",\"retry\":{\"initialMs\":61000,\"maxMs\":90000000}" }, { "plain", "" },
                { "limits", ",\"timeoutMs\":2500,\"expiresAt\":\"2099-01-01T00:00:00Z\"" },
                { "first", ",\"priority\":1" } };
        for (String[] j : jobs) {
            given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"" + j[0]
                    + "\",\"delayMs\":3600000" + j[1] + "}").post("/jobs").then().statusCode(201);
        }
        given().get("/delayq/job?topic=" + topic + "&id=own").then().statusCode(200)
                .body(containsString("<th>retry</th><td data-col=\"retry\">200 ms → 400 ms <span"));
        given().get("/delayq/job?topic=" + topic + "&id=initial").then().statusCode(200)
                .body(containsString("data-col=\"retry\">1500 ms → the topic&#39;s max (at least 1500 ms) <span"));
        given().get("/delayq/job?topic=" + topic + "&id=max").then().statusCode(200)
                .body(containsString("data-col=\"retry\">the topic&#39;s initial delay (at most 90 s) → 90 s <span"));
        given().get("/delayq/job?topic=" + topic + "&id=plain").then().statusCode(200)
                .body(containsString("lost attempts"))
                .body(not(containsString("data-col=\"retry\"")))
                .body(not(containsString("<th>retry</th>")))
                .body(not(containsString("data-col=\"timeout\""))).body(not(containsString("data-col=\"expiresAt\"")));
        given().get("/delayq/job?topic=" + topic + "&id=limits").then().statusCode(200)
                .body(containsString("<th>timeout</th><td data-col=\"timeout\">2500 ms <span"))
                .body(containsString("<th>expires</th><td data-col=\"expiresAt\">2099-01-01"));
        given().get("/delayq/job?topic=" + topic + "&id=first").then().statusCode(200)
                .body(containsString("<th>priority</th><td data-col=\"priority\">1 <span"));
        given().get("/delayq/job?topic=" + topic + "&id=plain").then().statusCode(200)
                .body(containsString("<th>priority</th><td data-col=\"priority\">3 <span"));
        // Each bound in the largest unit that shows it without rounding.
        given().get("/delayq/job?topic=" + topic + "&id=units").then().statusCode(200)
                .body(containsString("data-col=\"retry\">61 s → 25 h <span"));
    }

    /**
     * The job tables (the topic page's next due, in flight and dead, and the jobs browser) show a
     * priority other than 3 beside the job's id, and nothing for 3: most jobs have it.
     */
    @Test
    void theJobTablesShowAPriorityOtherThanThreeBesideTheId() {
        String topic = Topics.fresh("ui-prio");
        String[][] jobs = { { "urgent", ",\"delayMs\":3600000,\"priority\":1" }, { "plain", ",\"delayMs\":3600000" },
                { "late", ",\"delayMs\":3600000,\"priority\":5" }, { "running", ",\"priority\":2" } };
        for (String[] j : jobs) {
            given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"" + j[0] + "\"" + j[1] + "}")
                    .post("/jobs").then().statusCode(201);
        }
        // In flight: taken as a replica would (no replica serves the topic), its lease outlasting the test.
        Partition p = queue.partitionOf(topic, "running");
        assertEquals(List.of("running"), queue.take(p, 10, 600_000, "ui-prio:", new HashSet<>(), List.of(), 0).jobs()
                .stream().map(j -> j.lease().id()).toList());
        DeadFilterPagesTest.bury(topic, "dead-4", "\u001A4\u001Arefused", System.currentTimeMillis());
        DeadFilterPagesTest.bury(topic, "dead-plain", "refused", System.currentTimeMillis());

        String page = given().get("/delayq/topics/" + topic).then().statusCode(200).extract().asString();
        for (String[] shown : new String[][] { { "urgent", "1" }, { "late", "5" }, { "running", "2" }, { "dead-4", "4" } }) {
            assertTrue(page.matches("(?s).*>" + shown[0] + "</a> <span class=\"prio\" data-col=\"priority\" title=\"priority "
                    + shown[1] + ": [^\"]*\">p" + shown[1] + "</span></td>.*"), shown[0] + ":\n" + page);
        }
        assertTrue(page.contains(">plain</a></td>") && page.contains(">dead-plain</a></td>"), page);

        given().get("/delayq/jobs?topic=" + topic).then().statusCode(200)
                .body(matchesRegex("(?s).*<code>urgent</code></a> <span class=\"prio\" data-col=\"priority\""
                        + " title=\"priority 1: [^\"]*\">p1</span></td>.*"))
                .body(containsString("<code>plain</code></a></td>"));
        given().get("/delayq/jobs?topic=" + topic + "&state=inflight").then().statusCode(200)
                .body(containsString("<code>running</code></a> <span class=\"prio\" data-col=\"priority\""));
        given().get("/delayq/jobs?topic=" + topic + "&state=dead").then().statusCode(200)
                .body(containsString("<code>dead-4</code></a> <span class=\"prio\" data-col=\"priority\""))
                .body(containsString("<code>dead-plain</code></a></td>"));
    }

    @Test
    void aTopicHeldByItsTargetsRetryAfterShowsAsThrottledUntilThen() {
        String topic = Topics.fresh("ui-throttled");
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"t1\",\"delayMs\":3600000}")
                .post("/jobs").then().statusCode(201);
        topicAdmin.hold(topic, false, 60_000).toCompletionStage().toCompletableFuture().join();
        // In the topic's own row of the overview.
        given().get("/delayq").then().statusCode(200)
                .body(matchesRegex("(?s).*data-topic=\"" + topic + "\">(?:(?!</tr>).)*throttled until 20.*"));
        given().get("/delayq/topics/" + topic).then().statusCode(200).body(containsString("throttled until 20"));
    }

    /**
     * The probe's right-to-left override, in a payload and in an error: shown as text, so it
     * cannot reorder what the operator reads.
     */
    @Test
    void bidirectionalControlsAreShownNotObeyed() {
        String topic = Topics.fresh("ui-bidi");
        given().contentType(ContentType.JSON).body("{\"topic\":\"" + topic + "\",\"id\":\"b1\",\"delayMs\":3600000,"
                + "\"payload\":{\"file\":\"invoice\u202Efdp.exe\",\"note\":\"a\u2067b\u2069c\"}}").post("/jobs").then().statusCode(201);
        DeadFilterPagesTest.bury(topic, "b2", "refused by \u202Eelbuod", System.currentTimeMillis());
        for (String page : new String[] { "/delayq/job?topic=" + topic + "&id=b1", "/delayq/topics/" + topic,
                "/delayq/job?topic=" + topic + "&id=b2" }) {
            given().get(page).then().statusCode(200).body(not(containsString("\u202E"))).body(not(containsString("\u2067")));
        }
        given().get("/delayq/job?topic=" + topic + "&id=b1").then().body(containsString("invoice[U+202E]fdp.exe"))
                .body(containsString("a[U+2067]b[U+2069]c"));
        given().get("/delayq/job?topic=" + topic + "&id=b2").then().body(containsString("refused by [U+202E]elbuod"));
    }

    /**
     * A kept success (topic "results", result-retention 10m) of priority 1: its page shows the result,
     * escaped, and the priority; the browser lists it with its priority.
     */
    @Test
    void aSucceededJobsPageShowsItsResultAndTheJobBrowserListsSucceededJobs() {
        String id = io.delayq.support.Topics.fresh("ui-res");
        io.delayq.support.RedisNotFull.await(redis);
        given().contentType(ContentType.JSON).body("{\"topic\":\"results\",\"id\":\"" + id
                + "\",\"priority\":1,\"payload\":{\"echo\":\"<b>paid</b>\"}}").post("/jobs").then().statusCode(201);
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(20)).until(() -> "succeeded".equals(
                given().get("/jobs/results/" + id).then().extract().jsonPath().getString("state")));
        given().get("/delayq/job?topic=results&id=" + id).then().statusCode(200)
                .body(containsString("<h2>Result</h2>")).body(containsString("&lt;b&gt;paid&lt;/b&gt;"))
                .body(not(containsString("<b>paid</b>")))
                .body(containsString("<th>priority</th><td data-col=\"priority\">1 <span"));
        given().get("/delayq/jobs?topic=results&state=succeeded").then().statusCode(200)
                .body(containsString("data-id=\"" + id + "\"")).body(containsString("class=\"result\""))
                .body(containsString("<code>" + id + "</code></a> <span class=\"prio\" data-col=\"priority\""));
    }
}
