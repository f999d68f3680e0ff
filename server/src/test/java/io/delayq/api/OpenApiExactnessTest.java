package io.delayq.api;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;

import io.delayq.support.OpenApiDocument;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;

/**
 * The OpenAPI document at {@code /q/openapi} is exact: every answer of every documented operation,
 * to valid and to invalid requests, has a status the document lists for that operation and a body of
 * the media type and schema it gives for that status; a valid request fits the document's request
 * schema; no request is answered 5xx. Clients generated for strict languages parse exactly what the
 * document says (a {@code null} where it says {@code integer} breaks them).
 * <p>
 * Table-driven: {@link #rows} holds hand-written requests per operation (in order: some need the
 * jobs an earlier row made), and {@link #generic} derives more from the document itself for every
 * operation (a malformed path parameter, a body that is not JSON, a JSON body that is not an object,
 * unknown names), so a new operation is checked from the day it is documented. A new operation also
 * needs at least one row here that it answers with a 2xx (and a 4xx, when it documents one beyond
 * 401 and 403): the test fails, naming it, until it has them.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class OpenApiExactnessTest {
    @jakarta.inject.Inject
    io.delayq.store.RedisGateway redis;

    /** A request, and the status it must get (0: any the document lists, but not 5xx). */
    record Call(String method, String path, String contentType, String body, int expected) {
        static Call of(String method, String path, int expected) {
            return new Call(method, path, null, null, expected);
        }

        static Call json(String method, String path, String body, int expected) {
            return new Call(method, path, "application/json", body, expected);
        }

        static Call text(String method, String path, String body, int expected) {
            return new Call(method, path, "text/plain", body, expected);
        }
    }

    /** Valid and invalid requests of every operation; {@code t} is a topic of this run, {@code s} a schedule. */
    static List<Call> rows(String t, String s) {
        String due = "{\"topic\":\"" + t + "\",\"id\":\"%s\",\"delayMs\":3600000}";
        String day = java.time.Instant.now().plus(java.time.Duration.ofDays(30)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
                .toString();
        List<Call> rows = new ArrayList<>(List.of(
                // POST /jobs
                Call.json("POST", "/jobs", due.formatted("a"), 201),
                Call.json("POST", "/jobs", due.formatted("a"), 200),
                Call.json("POST", "/jobs", "{\"topic\":\"" + t + "\",\"id\":\"r\",\"runAt\":\"" + day + "\","
                        + "\"payload\":{\"order\":42},\"maxAttempts\":3,\"retry\":{\"initialMs\":100,\"maxMs\":1000},"
                        + "\"group\":\"g1\"}", 201),
                Call.json("POST", "/jobs", "{\"topic\":\"" + t + "\",\"id\":\"a\",\"delayMs\":7200000,\"ifExists\":"
                        + "\"replace\"}", 200),
                Call.json("POST", "/jobs", "{\"topic\":\"" + t + "\"}", 201),
                Call.json("POST", "/jobs", "{\"topic\":\"bad topic!\"}", 400),
                Call.json("POST", "/jobs", "{\"topic\":\"" + t + "\",\"delayMs\":-1}", 400),
                Call.json("POST", "/jobs", "{\"topic\":\"" + t + "\",\"delayMs\":1,\"runAt\":\"2099-01-01T00:00:00Z\"}", 400),
                Call.json("POST", "/jobs", "{\"topic\":\"" + t + "\",\"ifExists\":\"merge\"}", 400),
                Call.json("POST", "/jobs", "{\"topic\":\"" + t + "\",\"payload\":\"" + "x".repeat(70_000) + "\"}", 413),
                // POST /jobs/batch
                Call.json("POST", "/jobs/batch", "[" + due.formatted("b1") + "," + due.formatted("b2") + "]", 200),
                Call.json("POST", "/jobs/batch", "[" + due.formatted("b4") + ",{\"topic\":\"bad topic!\"}]", 400),
                Call.json("POST", "/jobs/batch", "{\"jobs\":[" + due.formatted("b3") + "]}", 200),
                Call.json("POST", "/jobs/batch", "[" + String.join(",", Collections.nCopies(1001, "{\"topic\":\"" + t
                        + "\"}")) + "]", 413),
                // GET, PATCH, DELETE /jobs/{topic}/{id}
                Call.of("GET", "/jobs/" + t + "/a", 200),
                Call.of("GET", "/jobs/" + t + "/r", 200),
                Call.of("GET", "/jobs/" + t + "/dead-1", 200),
                Call.of("GET", "/jobs/" + t + "/none", 404),
                Call.json("PATCH", "/jobs/" + t + "/a", "{\"delayMs\":600000}", 200),
                Call.json("PATCH", "/jobs/" + t + "/a", "{\"runAt\":\"" + day + "\"}", 200),
                Call.json("PATCH", "/jobs/" + t + "/a", "{}", 400),
                Call.json("PATCH", "/jobs/" + t + "/none", "{\"delayMs\":1}", 404),
                Call.json("PATCH", "/jobs/" + t + "/dead-1", "{\"delayMs\":1}", 409),
                Call.of("DELETE", "/jobs/" + t + "/b1", 204),
                Call.of("DELETE", "/jobs/" + t + "/b1", 404),
                Call.of("DELETE", "/jobs/" + t + "/dead-1", 409),
                // Topics
                Call.of("GET", "/topics", 200),
                Call.of("POST", "/topics/" + t + "/pause", 200),
                Call.of("POST", "/topics/" + t + "/resume", 200),
                Call.json("PUT", "/topics/" + t + "/rate-limit", "{\"perSecond\":2.5}", 200),
                Call.json("PUT", "/topics/" + t + "/rate-limit", "{\"perSecond\":0}", 400),
                Call.of("DELETE", "/topics/" + t + "/rate-limit", 200),
                Call.json("PUT", "/topics/" + t + "/max-in-flight", "{\"max\":8}", 200),
                Call.json("PUT", "/topics/" + t + "/max-in-flight", "{\"max\":0}", 400),
                Call.of("DELETE", "/topics/" + t + "/max-in-flight", 200),
                Call.json("PUT", "/topics/" + t + "/group-rate-limit", "{\"perSecond\":0.5}", 200),
                Call.json("PUT", "/topics/" + t + "/group-rate-limit", "{\"perSecond\":-1}", 400),
                Call.of("DELETE", "/topics/" + t + "/group-rate-limit", 200),
                Call.of("DELETE", "/topics/" + t, 409),
                Call.json("POST", "/jobs", "{\"topic\":\"" + t + "-gone\",\"id\":\"x\",\"delayMs\":3600000}", 201),
                Call.of("DELETE", "/jobs/" + t + "-gone/x", 204),
                Call.of("DELETE", "/topics/" + t + "-gone", 204),
                Call.of("DELETE", "/topics/" + Topics.fresh("never"), 404),
                // Dead jobs (dead-1 .. dead-5 are buried before the rows run)
                Call.of("GET", "/topics/" + t + "/dead", 200),
                Call.of("GET", "/topics/" + t + "/dead?idPrefix=dead-&error=boom&limit=2", 200),
                Call.of("GET", "/topics/" + t + "/dead?limit=none", 400),
                Call.of("POST", "/topics/" + t + "/dead/dead-2/requeue", 200),
                Call.of("POST", "/topics/" + t + "/dead/dead-2/requeue", 404),
                Call.of("DELETE", "/topics/" + t + "/dead/dead-3", 204),
                Call.of("DELETE", "/topics/" + t + "/dead/dead-3", 404),
                Call.json("POST", "/topics/" + t + "/dead/requeue", "{\"idPrefix\":\"dead-4\"}", 200),
                Call.json("POST", "/topics/" + t + "/dead/purge", "{\"idPrefix\":\"dead-5\",\"error\":\"BOOM\"}", 200),
                Call.of("POST", "/topics/" + t + "/dead/purge", 200),
                // Browsing and bulk actions on a topic's jobs
                Call.of("GET", "/topics/" + t + "/jobs?state=scheduled&limit=10", 200),
                Call.of("GET", "/topics/" + t + "/jobs?state=dead&fields=full&limit=5", 200),
                Call.of("GET", "/topics/" + t + "/jobs?state=inflight&idPrefix=a", 200),
                Call.of("GET", "/topics/" + t + "/jobs?state=sideways", 400),
                Call.of("GET", "/topics/" + t + "/jobs?limit=5000", 400),
                Call.json("POST", "/topics/" + t + "/jobs/reschedule", "{\"idPrefix\":\"zz-none\",\"delayMs\":60000}", 200),
                Call.json("POST", "/topics/" + t + "/jobs/reschedule", "{\"idPrefix\":\"zz-none\"}", 400),
                Call.json("POST", "/topics/" + t + "/jobs/cancel", "{\"idPrefix\":\"zz-none\"}", 200),
                Call.json("POST", "/topics/" + t + "/jobs/cancel", "{\"idPrefix\":7}", 400),
                // History: quiet minutes have no lateness (null)
                Call.of("GET", "/history", 200),
                Call.of("GET", "/history?minutes=1440", 200),
                Call.of("GET", "/history?minutes=0", 400),
                Call.of("GET", "/topics/" + t + "/history?minutes=5", 200),
                Call.of("GET", "/topics/" + t + "/history?minutes=abc", 400),
                // Schedules
                Call.json("PUT", "/schedules/" + s, "{\"every\":\"1h\",\"topic\":\"" + t + "\",\"payload\":{\"n\":1}}", 201),
                Call.json("PUT", "/schedules/" + s, "{\"cron\":\"0 0 3 * * ?\",\"timeZone\":\"Europe/Paris\",\"topic\":\""
                        + t + "\",\"misfire\":\"skip\"}", 200),
                Call.json("PUT", "/schedules/" + s, "{\"topic\":\"" + t + "\"}", 400),
                Call.json("PUT", "/schedules/" + s, "{\"every\":\"1h\",\"cron\":\"0 0 3 * * ?\",\"topic\":\"" + t + "\"}", 400),
                Call.of("GET", "/schedules", 200),
                Call.of("GET", "/schedules/" + s, 200),
                Call.of("GET", "/schedules/" + s + "-none", 404),
                Call.of("POST", "/schedules/" + s + "/trigger", 201),
                Call.of("POST", "/schedules/" + s + "-none/trigger", 404),
                Call.json("PUT", "/schedules/" + s, "{\"every\":\"1h\",\"topic\":\"" + t + "\",\"overlap\":\"skip\","
                        + "\"start\":\"2026-01-01T00:00:00Z\",\"end\":\"2036-01-01T00:00:00Z\"}", 200),
                Call.json("PUT", "/schedules/" + s, "{\"every\":\"1h\",\"topic\":\"" + t + "\",\"start\":\"2030-01-01T00:00:00Z\","
                        + "\"end\":\"2029-01-01T00:00:00Z\"}", 400),
                Call.of("POST", "/schedules/" + s + "/pause", 200),
                Call.of("POST", "/schedules/" + s + "/resume", 200),
                Call.of("POST", "/schedules/" + s + "-none/pause", 404),
                Call.of("POST", "/schedules/test-nightly/pause", 409),
                Call.of("POST", "/schedules/test-nightly/resume", 409),
                Call.json("POST", "/schedules/" + s + "/backfill", "{\"from\":\"2026-06-01T00:00:00Z\",\"to\":"
                        + "\"2026-06-01T05:00:00Z\"}", 200),
                Call.json("POST", "/schedules/" + s + "/backfill", "{\"from\":\"2026-06-01T00:00:00Z\",\"to\":"
                        + "\"2026-08-01T00:00:00Z\"}", 400),
                Call.json("POST", "/schedules/" + s + "-none/backfill", "{\"from\":\"2026-06-01T00:00:00Z\",\"to\":"
                        + "\"2026-06-01T05:00:00Z\"}", 404),
                Call.of("DELETE", "/schedules/" + s, 204),
                Call.of("DELETE", "/schedules/" + s, 404)));
        return rows;
    }

    /**
     * Requests made from the document alone, for every operation: each path parameter malformed in
     * turn (a 4xx), unknown names (any documented answer), and for an operation with a JSON body one
     * that is not JSON by its Content-Type (415), one that does not parse (400), and JSON of the wrong
     * shape (400).
     */
    static List<Call> generic(OpenApiDocument doc) {
        List<Call> calls = new ArrayList<>();
        for (OpenApiDocument.Operation op : doc.operations()) {
            if (!isApi(op.template())) {
                continue;
            }
            List<String> params = op.parameters();
            for (int bad = 0; bad < params.size(); bad++) {
                String path = op.template();
                for (int i = 0; i < params.size(); i++) {
                    path = path.replace("{" + params.get(i) + "}", i == bad ? "bad%20name!" : Topics.fresh("gen"));
                }
                calls.add(new Call(op.method(), path, op.hasJsonBody() ? "application/json" : null,
                        op.hasJsonBody() ? "{}" : null, -4));
            }
            String path = op.template();
            for (String p : params) {
                path = path.replace("{" + p + "}", Topics.fresh("gen"));
            }
            calls.add(Call.of(op.method(), path, 0));
            if (op.hasJsonBody()) {
                calls.add(Call.text(op.method(), path, "{}", 415));
                calls.add(Call.json(op.method(), path, "{\"", 400));
                calls.add(Call.json(op.method(), path, "\"text\"", 400));
            }
        }
        return calls;
    }

    private static boolean isApi(String template) {
        return OpenApiContract.isDelayqPath(template);
    }

    @Test
    void everyAnswerOfEveryOperationIsWhatTheDocumentSays() {
        OpenApiDocument doc = OpenApiDocument.served();
        String t = Topics.fresh("oas");
        long now = System.currentTimeMillis();
        for (int i = 1; i <= 5; i++) {
            DeadFilterTest.bury(t, "dead-" + i, "boom " + i, now - 10_000 + i);
        }
        List<Call> calls = new ArrayList<>(rows(t, Topics.fresh("oas-s")));
        // Kept successes (topic "results" has a result retention): a result, and one dropped.
        String kept = Topics.fresh("oas-r"), dropped = Topics.fresh("oas-rd");
        io.delayq.support.RedisNotFull.await(redis);
        for (String[] job : new String[][] { { kept, "{\"echo\":{\"a\":[1,\"x\"]}}" }, { dropped, "{\"size\":70000}" } }) {
            given().contentType("application/json").body("{\"topic\":\"results\",\"id\":\"" + job[0] + "\",\"payload\":"
                    + job[1] + "}").post("/jobs").then().statusCode(201);
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(20)).until(() -> "succeeded".equals(
                    given().get("/jobs/results/" + job[0]).then().extract().jsonPath().getString("state")));
            calls.add(Call.of("GET", "/jobs/results/" + job[0], 200));
        }
        calls.add(Call.of("GET", "/topics/results/jobs?state=succeeded&limit=5&fields=full", 200));
        calls.addAll(generic(doc));

        List<String> wrong = new ArrayList<>();
        Map<String, Set<Integer>> answered = new TreeMap<>();
        for (Call call : calls) {
            RequestSpecification request = given().urlEncodingEnabled(false);
            if (call.body() != null) {
                request = request.contentType(call.contentType()).body(call.body());
            }
            Response r = request.request(call.method(), call.path());
            String what = call.method() + " " + abbrev(call.path());
            int status = r.getStatusCode();
            if (status >= 500) {
                wrong.add(what + " -> " + status + ": " + abbrev(r.asString()));
            } else if (call.expected() > 0 && status != call.expected()) {
                wrong.add(what + " -> " + status + ", expected " + call.expected() + ": " + abbrev(r.asString()));
            } else if (call.expected() == -4 && (status < 400 || status > 499)) {
                wrong.add(what + " -> " + status + ", expected a 4xx (a malformed path parameter)");
            }
            wrong.addAll(doc.check(call.method(), call.path(), status, r.getContentType(), r.asString()));
            var op = doc.operation(call.method(), call.path());
            op.ifPresent(o -> answered.computeIfAbsent(o.id(), k -> new LinkedHashSet<>()).add(status));
            if (op.isPresent() && status >= 200 && status < 300) {
                wrong.addAll(doc.checkRequest(op.get(), call.body()));
            }
        }
        for (OpenApiDocument.Operation op : doc.operations()) {
            if (!isApi(op.template())) {
                continue;
            }
            Set<Integer> statuses = answered.getOrDefault(op.id(), Set.of());
            if (statuses.stream().noneMatch(s -> s >= 200 && s < 300)) {
                wrong.add(op.id() + " (" + op.method() + " " + op.template() + ") answered no 2xx to any row "
                        + statuses + ": add its valid requests to OpenApiExactnessTest.rows");
            }
            // 401 and 403 need credentials this profile has none of; any other 4xx documented needs a row.
            boolean refuses = op.statuses().stream().anyMatch(s -> s.startsWith("4") && !s.equals("401") && !s.equals("403"));
            if (refuses && statuses.stream().noneMatch(s -> s >= 400 && s < 500)) {
                wrong.add(op.id() + " (" + op.method() + " " + op.template() + ") answered no 4xx " + statuses
                        + ": add an invalid request to OpenApiExactnessTest.rows");
            }
        }
        assertTrue(wrong.isEmpty(), wrong.size() + " answers the document does not describe:\n"
                + String.join("\n", wrong));
    }

    /**
     * A path under the API's roots that no operation has answers 404 (a wrong method on a known path
     * 405) with a problem body, as every other error of the API, rather than an HTML page.
     */
    @Test
    void unknownPathsAndMethodsUnderTheApiAnswerAProblemBody() {
        Map<String, Integer> cases = new LinkedHashMap<>();
        cases.put("GET /jobs/a/b/c", 404);
        cases.put("GET /topics/t/nothing-here", 404);
        cases.put("POST /schedules/a/b/c", 404);
        cases.put("GET /history/x", 404);
        cases.put("PUT /jobs", 405);
        cases.put("POST /history", 405);
        cases.put("PATCH /topics", 405);
        for (Map.Entry<String, Integer> c : cases.entrySet()) {
            String[] mp = c.getKey().split(" ");
            Response r = given().request(mp[0], mp[1]);
            assertEquals(c.getValue(), r.getStatusCode(), c.getKey());
            assertEquals(Problem.MEDIA_TYPE, r.getContentType().replaceAll(";.*", ""), c.getKey() + ": " + r.asString());
            assertEquals(c.getValue(), r.jsonPath().getInt("status"), c.getKey());
            assertEquals(mp[1], r.jsonPath().getString("instance"), c.getKey());
        }
        // Outside the API's roots the application's own 404 is left as it is (a service's own paths).
        assertFalse(given().get("/not-delayq").then().statusCode(404).extract().contentType()
                .startsWith(Problem.MEDIA_TYPE));
    }

    private static String abbrev(String s) {
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }
}
