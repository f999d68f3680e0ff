package io.delayq.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.dev.RedisProcess;
import picocli.CommandLine;

/**
 * The CLI against the packaged server on a redis-server of its own: each command's happy path
 * with its table and its JSON read back (in this JVM, {@link #cli}), each exit code provoked
 * through the packaged CLI ({@code target/quarkus-app/quarkus-run.jar}, as {@code cli/delayq}
 * runs it: {@link #jar}), no command hanging without a server, and the guide's examples run
 * word for word by the launcher.
 * One server for the class; each test on topics of its own. The last test takes Redis, then the
 * server, away.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CliIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOKEN = "cli-test-token";
    private static final Path CLI_JAR = Path.of("target", "quarkus-app", "quarkus-run.jar");
    /** Jobs of these topics go to an HTTP target nobody listens on, once: they die at their first attempt. */
    private static final String FAILING = "failing";
    /** The failing topic of the guide's examples (docs/operations.md "Command line"). */
    private static final String DOCS = "payments";
    /**
     * A topic the server configures (and does not serve): a replica keeps a history of its own only
     * for topics it serves or configures (others count in the total alone).
     */
    static final String HISTORY = "cli-history";
    /**
     * A topic whose jobs succeed at an HTTP target of this test ({@link #target}, 200 with a JSON
     * body) and are kept with that body as their result (result-retention).
     */
    private static final String RESULTS = "cli-results";
    private static final Path GUIDE = Path.of("..", "docs", "operations.md");

    private static RedisProcess redis;
    private static com.sun.net.httpserver.HttpServer target;
    private static ServerProcess server;
    private static ServerSocket silent;

    /** One run of the CLI: its exit code, stdout, stderr. */
    record Run(int code, String out, String err, Duration took) {
        JsonNode json() {
            try {
                return JSON.readTree(out);
            } catch (IOException e) {
                throw new AssertionError("not one JSON object: " + out, e);
            }
        }

        /** {@code --output json} of a list: one object per line. */
        List<JsonNode> lines() {
            List<JsonNode> l = new ArrayList<>();
            for (String line : out.split("\n")) {
                if (!line.isBlank()) {
                    try {
                        l.add(JSON.readTree(line));
                    } catch (IOException e) {
                        throw new AssertionError("not a JSON line: " + line, e);
                    }
                }
            }
            return l;
        }

        Run exits(int expected) {
            assertEquals(expected, code, "exit code; stdout:\n" + out + "\nstderr:\n" + err);
            return this;
        }
    }

    @BeforeAll
    static void start() throws IOException {
        redis = RedisProcess.startEphemeral();
        int closed = RedisProcess.freePort();
        target = com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        target.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            byte[] body = ("{\"receipt\":\"" + exchange.getRequestHeaders().getFirst("X-Delayq-Job-Id") + "\"}")
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        target.start();
        server = ServerProcess.start(redis.port(), Map.ofEntries(
                Map.entry("quarkus.security.users.embedded.plain-text", "true"),
                Map.entry("quarkus.security.users.embedded.users.viewer", "v-pass"),
                Map.entry("quarkus.security.users.embedded.roles.viewer", "delayq-viewer"),
                Map.entry("quarkus.security.users.embedded.users.operator", "o-pass"),
                Map.entry("quarkus.security.users.embedded.roles.operator", "delayq-operator"),
                Map.entry("delayq.api.token", TOKEN),
                Map.entry("delayq.schedules.cli-tick.every", "1h"),
                Map.entry("delayq.schedules.cli-tick.topic", "ticks"),
                Map.entry("delayq.schedules.nightly-report.cron", "0 0 2 * * ?"),
                Map.entry("delayq.schedules.nightly-report.topic", "reports"),
                Map.entry("delayq.topics." + FAILING + ".http.url", "http://127.0.0.1:" + closed + "/"),
                Map.entry("delayq.topics." + FAILING + ".max-attempts", "1"),
                Map.entry("delayq.topics." + DOCS + ".http.url", "http://127.0.0.1:" + closed + "/"),
                Map.entry("delayq.topics." + DOCS + ".max-attempts", "1"),
                Map.entry("delayq.topics." + HISTORY + ".max-attempts", "3"),
                Map.entry("delayq.topics." + RESULTS + ".http.url", "http://127.0.0.1:" + target.getAddress().getPort() + "/"),
                Map.entry("delayq.topics." + RESULTS + ".result-retention", "10m")));
        // Accepts connections (the backlog does) and never answers a byte: a frozen server.
        silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    }

    @AfterAll
    static void stop() throws Exception {
        if (silent != null) {
            silent.close();
        }
        if (server != null) {
            server.close();
        }
        if (redis != null) {
            redis.stop();
        }
        if (target != null) {
            target.stop(0);
        }
    }

    private static String topic(String name) {
        return name + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /**
     * The CLI as an operator with the token, in this JVM: the same command classes as the jar
     * without a JVM start per call (the CLI's own tests make some hundred calls; a start costs a
     * second or two on a busy machine). Every command also runs through the launcher and the jar in
     * {@link #theGuidesExamplesRunAsWritten}, and the exit codes through the jar ({@link #jar}).
     */
    static Run cli(String... args) {
        List<String> a = new ArrayList<>(List.of("--url", server.url(), "--token", TOKEN));
        a.addAll(List.of(args));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cmd = new CommandLine(new Delayq());
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(err));
        long t0 = System.nanoTime();
        int code = cmd.execute(a.toArray(String[]::new));
        cmd.getOut().flush();
        cmd.getErr().flush();
        return new Run(code, out.toString(), err.toString(), Duration.ofNanos(System.nanoTime() - t0));
    }

    /** The packaged CLI as a process, as an operator with the token. */
    static Run jar(String... args) {
        List<String> a = new ArrayList<>(List.of("--url", server.url(), "--token", TOKEN));
        a.addAll(List.of(args));
        return run(a, Map.of());
    }

    /** The CLI with exactly these arguments and extra environment (no DELAYQ_* of the machine's). */
    static Run run(List<String> args, Map<String, String> env) {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar",
                CLI_JAR.toString()));
        cmd.addAll(args);
        return exec(cmd, env);
    }

    static Run exec(List<String> cmd, Map<String, String> env) {
        return exec(cmd, env, Duration.ofSeconds(60));
    }

    /** As above, given {@code limit} to end (a script that starts the CLI's JVM many times). */
    static Run exec(List<String> cmd, Map<String, String> env, Duration limit) {
        try {
            Path out = Files.createTempFile("cli-out", ".txt");
            Path err = Files.createTempFile("cli-err", ".txt");
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
            pb.environment().keySet().removeIf(k -> k.startsWith("DELAYQ_"));
            pb.environment().putAll(env);
            long t0 = System.nanoTime();
            Process p = pb.start();
            p.getOutputStream().close();
            if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                fail("still running after " + limit.toSeconds() + " s: " + cmd);
            }
            Duration took = Duration.ofNanos(System.nanoTime() - t0);
            Run r = new Run(p.exitValue(), Files.readString(out), Files.readString(err), took);
            Files.delete(out);
            Files.delete(err);
            return r;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static JsonNode find(List<JsonNode> rows, String field, String value) {
        return rows.stream().filter(r -> value.equals(r.path(field).asText())).findFirst()
                .orElseThrow(() -> new AssertionError("no " + field + "=" + value + " in " + rows));
    }

    /** Enqueues jobs of a failing topic, due now, and waits until all are dead. */
    private static void deadJobs(String topic, String... ids) {
        for (String id : ids) {
            int status = server.send("POST", "/jobs", TOKEN, "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\"}")
                    .statusCode();
            assertTrue(status == 201 || status == 200, "enqueue " + id + ": " + status);
        }
        await(() -> {
            try {
                JsonNode dead = JSON.readTree(server.send("GET", "/topics/" + topic + "/dead?limit=1000", TOKEN, null).body());
                List<String> have = new ArrayList<>();
                dead.forEach(d -> have.add(d.path("id").asText()));
                return have.containsAll(List.of(ids));
            } catch (IOException e) {
                return false;
            }
        }, "dead jobs " + List.of(ids) + " in " + topic);
    }

    private static void await(java.util.function.BooleanSupplier condition, String what) {
        try {
            org.awaitility.Awaitility.await(what).atMost(java.time.Duration.ofSeconds(30)).until(condition::getAsBoolean);
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            fail("not within 30 s: " + what + "\nserver log:\n" + tail(server.logText()));
        }
    }

    private static String tail(String s) {
        return s.length() < 3000 ? s : s.substring(s.length() - 3000);
    }

    // ---- jobs ------------------------------------------------------------------------------

    @Test
    void enqueueGetRescheduleAndCancelAJob() {
        String t = topic("jobs");
        Run created = cli("job", "enqueue", t, "--id", "order-42", "--payload", "{\"orderId\": 42}", "--delay", "30m")
                .exits(0);
        assertTrue(created.out().startsWith("created: " + t + "/order-42\n"), created.out());
        assertTrue(created.out().matches("(?s).*runAt +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ \\(in 29m\\d+s\\).*"),
                created.out());

        JsonNode kept = cli("--output", "json", "job", "enqueue", t, "--id", "order-42", "--delay", "5m").exits(0).json();
        assertEquals("scheduled", kept.path("state").asText());
        assertTrue(kept.path("replaced").isMissingNode(), kept.toString());
        JsonNode extended = cli("--output", "json", "job", "enqueue", t, "--id", "order-42", "--delay", "1h",
                "--if-exists", "extend").exits(0).json();
        assertTrue(extended.path("replaced").asBoolean(), extended.toString());
        Instant runAt = Instant.parse(extended.path("runAt").asText());
        assertTrue(Duration.between(Instant.now(), runAt).toMinutes() >= 58, runAt.toString());

        String inTenDays = Instant.now().plus(Duration.ofDays(10)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString();
        JsonNode at = cli("--output", "json", "job", "enqueue", t, "--id", "order-43", "--at", inTenDays).exits(0).json();
        assertEquals(inTenDays, at.path("runAt").asText());
        String inEleven = Instant.now().plus(Duration.ofDays(11)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString();
        cli("job", "enqueue", t, "--id", "order-44", "--at", inTenDays, "--timeout-ms", "2500", "--expires-at", inEleven)
                .exits(0);
        JsonNode limited = cli("--output", "json", "job", "get", t, "order-44").exits(0).json();
        assertEquals(2500, limited.path("timeoutMs").asInt(), limited.toString());
        assertEquals(inEleven, limited.path("expiresAt").asText());
        assertTrue(cli("job", "enqueue", t, "--id", "order-45", "--at", inEleven, "--expires-at", inTenDays).exits(2)
                .err().contains("expiresAt"), "the server's 400 names the field");
        JsonNode generated = cli("--output", "json", "job", "enqueue", t).exits(0).json();
        assertTrue(generated.path("id").asText().length() > 8, generated.toString());

        JsonNode got = cli("--output", "json", "job", "get", t, "order-42").exits(0).json();
        assertEquals("scheduled", got.path("state").asText());
        assertEquals(0, got.path("attempts").asInt());
        Run table = cli("job", "get", t, "order-42").exits(0);
        assertTrue(table.out().matches("(?s)id +order-42\ntopic +" + t + "\n.*state +scheduled\n.*"), table.out());

        JsonNode moved = cli("--output", "json", "job", "reschedule", t, "order-42", "--delay", "2h").exits(0).json();
        long minutes = Duration.between(Instant.now(), Instant.parse(moved.path("runAt").asText())).toMinutes();
        assertTrue(minutes >= 118 && minutes <= 120, moved.toString());
        java.time.OffsetDateTime local = Instant.now().plus(Duration.ofDays(20)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
                .atOffset(java.time.ZoneOffset.ofHours(2));
        JsonNode movedAt = cli("--output", "json", "job", "reschedule", t, "order-42", "--at", local.toString())
                .exits(0).json();
        assertEquals(local.toInstant().toString(), movedAt.path("runAt").asText());

        Run cancelled = cli("job", "cancel", t, "order-43").exits(0);
        assertEquals("cancelled: " + t + "/order-43\n", cancelled.out());
        JsonNode cancelledJson = cli("--output", "json", "job", "cancel", t, "order-42").exits(0).json();
        assertTrue(cancelledJson.path("cancelled").asBoolean(), cancelledJson.toString());

        Run gone = jar("job", "get", t, "order-42").exits(1);
        assertEquals("", gone.out());
        assertTrue(gone.err().startsWith("delayq: 404 Not Found: "), gone.err());
        cli("job", "cancel", t, "order-42").exits(1);
        cli("job", "reschedule", t, "order-42", "--delay", "1m").exits(1);
    }

    @Test
    void jobListPagesThroughATopicAndCancelByPrefixTakesTheMatches() {
        String t = topic("listing");
        for (int i = 0; i < 5; i++) {
            cli("job", "enqueue", t, "--id", "t7-" + i, "--delay", (60 + i) + "m").exits(0);
        }
        cli("job", "enqueue", t, "--id", "t8-0", "--delay", "61m", "--group", "g8").exits(0);
        Run page = cli("--output", "json", "job", "list", t, "--id-prefix", "t7-", "--limit", "2").exits(0);
        assertEquals(2, page.lines().size(), page.out());
        assertTrue(page.err().contains("more jobs follow"), page.err());
        Run every = cli("--output", "json", "job", "list", t, "--id-prefix", "t7-", "--limit", "2", "--all").exits(0);
        assertEquals(List.of("t7-0", "t7-1", "t7-2", "t7-3", "t7-4"),
                every.lines().stream().map(l -> l.path("id").asText()).toList());
        Run table = cli("job", "list", t, "--group", "g8").exits(0);
        assertTrue(table.out().startsWith("ID ") && table.out().contains("t8-0") && table.out().contains("g8"), table.out());
        cli("job", "list", t, "--state", "done").exits(2);

        Run cancelled = cli("job", "cancel", t, "--id-prefix", "t7-").exits(0);
        assertEquals("cancelled 5 scheduled jobs of " + t + "\n", cancelled.out());
        assertEquals(1, cli("--output", "json", "job", "list", t).exits(0).lines().size());
        assertEquals(1, cli("--output", "json", "job", "cancel", t, "--group", "g8").exits(0).json().path("cancelled")
                .asInt());
        cli("job", "cancel", t).exits(2);
        cli("job", "cancel", t, "x", "--id-prefix", "x").exits(2);
    }

    @Test
    void aGroupIsSentAndABadOneIsTheServers400() {
        String t = topic("groups");
        cli("job", "enqueue", t, "--id", "g-1", "--group", "customer-7").exits(0);
        assertEquals("customer-7", cli("--output", "json", "job", "get", t, "g-1").exits(0).json().path("group").asText());
        assertTrue(cli("job", "get", t, "g-1").exits(0).out().contains("customer-7"), "the table shows it too");
        // A group the server refuses: its 400 names the field, on stderr, exit 2, nothing on stdout.
        Run r = cli("job", "enqueue", t, "--id", "g-2", "--group", "no spaces");
        r.exits(2);
        assertEquals("", r.out());
        assertTrue(r.err().startsWith("delayq: 400 Bad Request: ") && r.err().contains("(field group)"), r.err());
    }

    @Test
    void aPriorityIsSentListedAndShownAndOneOutsideOneToFiveIsRefused() {
        String t = topic("priorities");
        cli("job", "enqueue", t, "--id", "p-1", "--delay", "1h", "--priority", "1").exits(0);
        cli("job", "enqueue", t, "--id", "p-plain", "--delay", "2h").exits(0);
        assertEquals(1, cli("--output", "json", "job", "get", t, "p-1").exits(0).json().path("priority").asInt());
        Run shown = cli("job", "get", t, "p-1").exits(0);
        assertTrue(shown.out().matches("(?s).*\npriority +1\n.*"), shown.out());
        // A replace without --priority keeps the stored one; with one, it changes it.
        cli("job", "enqueue", t, "--id", "p-1", "--delay", "3h", "--if-exists", "replace").exits(0);
        assertEquals(1, cli("--output", "json", "job", "get", t, "p-1").exits(0).json().path("priority").asInt());
        cli("job", "enqueue", t, "--id", "p-1", "--delay", "3h", "--if-exists", "replace", "--priority", "5").exits(0);
        assertEquals(5, cli("--output", "json", "job", "get", t, "p-1").exits(0).json().path("priority").asInt());

        Run table = cli("job", "list", t).exits(0);
        String header = table.out().lines().findFirst().orElseThrow();
        assertTrue(header.matches("ID +STATE +RUN AT +ATTEMPTS +PRIORITY +GROUP +LAST ERROR"), header);
        int col = header.indexOf("PRIORITY");
        // The plain job shows 3, as the server does for a job given none; p-1 its new 5.
        String plain = table.out().lines().filter(l -> l.startsWith("p-plain ")).findFirst().orElseThrow();
        String first = table.out().lines().filter(l -> l.startsWith("p-1 ")).findFirst().orElseThrow();
        assertTrue(plain.charAt(col) == '3' && plain.charAt(col + 1) == ' ', table.out());
        assertTrue(first.charAt(col) == '5' && first.charAt(col + 1) == ' ', table.out());
        assertEquals(5, find(cli("--output", "json", "job", "list", t).exits(0).lines(), "id", "p-1").path("priority").asInt());

        // Outside 1..5 or not a number: refused before anything is sent (exit 2, the option named), nothing written.
        for (String bad : new String[] { "0", "6", "-1", "high", "2.5" }) {
            Run r = cli("job", "enqueue", t, "--id", "p-bad", "--priority", bad).exits(2);
            assertEquals("", r.out());
            assertTrue(r.err().contains("--priority"), bad + ": " + r.err());
        }
        cli("job", "get", t, "p-bad").exits(1);
    }

    @Test
    void succeededJobsAreListedWithTheirPriorityAndResult() {
        String id = topic("r");
        cli("job", "enqueue", RESULTS, "--id", id, "--priority", "2").exits(0);
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> "succeeded".equals(
                cli("--output", "json", "job", "get", RESULTS, id).exits(0).json().path("state").asText()));
        JsonNode got = cli("--output", "json", "job", "get", RESULTS, id).exits(0).json();
        assertEquals(2, got.path("priority").asInt());
        assertEquals(id, got.path("result").path("receipt").asText());

        Run table = cli("job", "list", RESULTS, "--state", "succeeded").exits(0);
        String header = table.out().lines().findFirst().orElseThrow();
        assertTrue(header.matches("ID +SUCCEEDED +ATTEMPTS +PRIORITY +RESULT"), header);
        String row = table.out().lines().filter(l -> l.startsWith(id + " ")).findFirst().orElseThrow();
        assertTrue(row.charAt(header.indexOf("PRIORITY")) == '2', table.out());
        assertTrue(row.substring(header.indexOf("RESULT")).startsWith("{\"receipt\":\"" + id + "\"}"), table.out());
        JsonNode listed = find(cli("--output", "json", "job", "list", RESULTS, "--state", "succeeded").exits(0).lines(),
                "id", id);
        assertEquals(2, listed.path("priority").asInt());
        assertEquals(id, listed.path("result").path("receipt").asText());
    }

    // ---- topics and flow control -------------------------------------------------------------

    @Test
    void topicsPauseResumeRateLimitAndMaxInFlight() {
        String t = topic("flow");
        cli("job", "enqueue", t, "--id", "a", "--delay", "10m").exits(0);
        JsonNode row = find(cli("--output", "json", "topics").exits(0).lines(), "topic", t);
        assertEquals(1, row.path("scheduled").asInt());

        JsonNode paused = cli("--output", "json", "pause", t).exits(0).json();
        assertTrue(paused.path("paused").asBoolean(), paused.toString());
        JsonNode limited = cli("--output", "json", "rate-limit", t, "50").exits(0).json();
        assertEquals(50.0, limited.path("rateLimit").path("perSecond").asDouble());
        assertEquals("api", limited.path("rateLimit").path("source").asText());
        JsonNode capped = cli("--output", "json", "max-in-flight", t, "5").exits(0).json();
        assertEquals(5, capped.path("maxInFlight").path("max").asInt(), capped.toString());
        JsonNode perGroup = cli("--output", "json", "group-rate-limit", t, "2.5").exits(0).json();
        assertEquals(2.5, perGroup.path("groupRateLimit").path("perSecond").asDouble(), perGroup.toString());
        assertEquals("api", perGroup.path("groupRateLimit").path("source").asText(), perGroup.toString());

        Run table = cli("topics").exits(0);
        String header = table.out().lines().findFirst().orElseThrow();
        assertTrue(header.matches("TOPIC +SCHEDULED +INFLIGHT +DEAD +NEXT DUE +FLOW"), header);
        String line = table.out().lines().filter(l -> l.startsWith(t + " ")).findFirst().orElseThrow();
        assertTrue(line.matches(t + " +1 +0 +0 +\\S+ \\S+Z \\(in 9m\\d+s\\) +paused, 50/s \\(api\\), 2.5/s per group \\(api\\), 0/5 in flight"), line);
        // Aligned: every row's NEXT DUE starts under its header.
        int col = header.indexOf("NEXT DUE");
        assertTrue(line.charAt(col - 1) == ' ' && line.charAt(col) != ' ', line);

        assertTrue(cli("rate-limit", t, "--clear").exits(0).out().contains("paused"));
        JsonNode ungrouped = cli("--output", "json", "group-rate-limit", t, "--clear").exits(0).json();
        assertTrue(ungrouped.path("groupRateLimit").isMissingNode(), ungrouped.toString());
        JsonNode uncapped = cli("--output", "json", "max-in-flight", t, "--clear").exits(0).json();
        assertTrue(uncapped.path("maxInFlight").isMissingNode(), uncapped.toString());
        JsonNode resumed = cli("--output", "json", "resume", t).exits(0).json();
        assertTrue(!resumed.path("paused").asBoolean() && resumed.path("rateLimit").isMissingNode(), resumed.toString());

    }

    // ---- dead jobs ------------------------------------------------------------------------------

    @Test
    void deadListRequeueAndPurgeByIdAndByFilter() {
        deadJobs(FAILING, "a-1", "a-2", "b-1", "c-1", "c-2");
        cli("pause", FAILING).exits(0); // requeued jobs stay scheduled while the test looks at them
        try {
            List<JsonNode> dead = cli("--output", "json", "dead", "list", FAILING).exits(0).lines();
            assertEquals(5, dead.size(), dead.toString());
            String error = find(dead, "id", "b-1").path("lastError").asText();
            assertTrue(!error.isEmpty(), dead.toString());
            Run table = cli("dead", "list", FAILING).exits(0);
            assertTrue(table.out().lines().findFirst().orElseThrow().matches("ID +DIED +ATTEMPTS +LAST ERROR"), table.out());
            String row = "a-1 +\\S+ \\S+Z \\((now|\\d+s ago)\\) +1 +HTTP target .+ not reached: .+";
            assertTrue(table.out().lines().anyMatch(l -> l.matches(row)), table.out());

            assertEquals(2, cli("--output", "json", "dead", "list", FAILING, "--id-prefix", "a-").exits(0).lines().size());
            assertEquals(1, cli("--output", "json", "dead", "list", FAILING, "--limit", "1").exits(0).lines().size());
            String word = error.split("[^A-Za-z]+").length > 0 ? longestWord(error) : error;
            assertEquals(5, cli("--output", "json", "dead", "list", FAILING, "--error", word).exits(0).lines().size());
            assertEquals(0, cli("--output", "json", "dead", "list", FAILING, "--error", "no such error text").exits(0)
                    .lines().size());

            JsonNode one = cli("--output", "json", "dead", "requeue", FAILING, "a-1").exits(0).json();
            assertEquals("scheduled", one.path("state").asText());
            cli("dead", "requeue", FAILING, "a-1").exits(1); // no longer dead
            Run bulk = cli("dead", "requeue", FAILING, "--id-prefix", "a-").exits(0);
            assertEquals("requeued 1 dead jobs of " + FAILING + ", due now\n", bulk.out());
            assertEquals("scheduled", cli("--output", "json", "job", "get", FAILING, "a-2").exits(0).json()
                    .path("state").asText());

            cli("dead", "purge", FAILING, "b-1").exits(0);
            cli("dead", "purge", FAILING, "b-1").exits(1);
            JsonNode byError = cli("--output", "json", "dead", "purge", FAILING, "--id-prefix", "c-", "--error", word)
                    .exits(0).json();
            assertEquals(2, byError.path("purged").asInt());
        } finally {
            cli("resume", FAILING).exits(0);
        }
        deadJobs(FAILING, "a-1", "a-2");
        JsonNode all = cli("--output", "json", "dead", "purge", FAILING, "--all").exits(0).json();
        assertEquals(2, all.path("purged").asInt());
        deadJobs(FAILING, "d-1");
        assertEquals(1, cli("--output", "json", "dead", "requeue", FAILING, "--all").exits(0).json().path("requeued").asInt());
    }

    private static String longestWord(String text) {
        String best = "";
        for (String w : text.split("[^A-Za-z]+")) {
            if (w.length() > best.length()) {
                best = w;
            }
        }
        return best;
    }

    @Test
    void cancellingADeadJobIsAConflict() {
        deadJobs(FAILING, "conflict-1");
        Run r = jar("job", "cancel", FAILING, "conflict-1").exits(1);
        assertTrue(r.err().startsWith("delayq: 409 Conflict: "), r.err());
        cli("dead", "purge", FAILING, "conflict-1").exits(0);
    }

    // ---- schedules and history ----------------------------------------------------------------

    @Test
    void schedulesListAndTrigger() {
        Run table = cli("schedules", "list").exits(0);
        assertTrue(table.out().lines().findFirst().orElseThrow().matches("NAME +SOURCE +WHEN +TOPIC +STATE +LAST TICK +NEXT TICK"),
                table.out());
        assertTrue(table.out().lines().anyMatch(l -> l.matches("cli-tick +config +every 1h +ticks +running +.*\\(in .*\\)")),
                table.out());
        JsonNode tick = find(cli("--output", "json", "schedules", "list").exits(0).lines(), "name", "cli-tick");
        assertEquals("ticks", tick.path("topic").asText());

        JsonNode job = cli("--output", "json", "schedules", "trigger", "cli-tick").exits(0).json();
        assertTrue(job.path("id").asText().startsWith("cli-tick:trigger:"), job.toString());
        assertEquals("ticks", job.path("topic").asText());
        Run said = cli("schedules", "trigger", "cli-tick").exits(0);
        assertTrue(said.out().startsWith("triggered cli-tick: ticks/cli-tick:trigger:"), said.out());
        Run unknown = cli("schedules", "trigger", "no-such-schedule").exits(1);
        assertTrue(unknown.err().contains("404"), unknown.err());
    }

    @Test
    void schedulesPutPauseResumeBackfillDelete() {
        String name = topic("cli-sched");
        Run put = cli("schedules", "put", name, "--every", "1h", "--topic", "ticks", "--payload", "{\"n\":1}",
                "--overlap", "skip", "--end", "2099-01-01T00:00:00Z").exits(0);
        assertTrue(put.out().startsWith("created " + name), put.out());
        JsonNode replaced = cli("--output", "json", "schedules", "put", name, "--every", "1h", "--topic", "ticks",
                "--overlap", "skip").exits(0).json();
        assertEquals("skip", replaced.path("overlap").asText());
        assertTrue(cli("schedules", "pause", name).exits(0).out().startsWith("paused " + name));
        assertTrue(cli("schedules", "list").exits(0).out().lines().anyMatch(l -> l.matches(name + " +api +every 1h +ticks +paused +.*")));
        JsonNode resumed = cli("--output", "json", "schedules", "resume", name).exits(0).json();
        assertEquals(false, resumed.path("paused").asBoolean(true));
        Run backfill = cli("schedules", "backfill", name, "--from", "2026-06-01T00:00:00Z", "--to", "2026-06-01T02:00:00Z").exits(0);
        assertEquals("backfilled " + name + ": 3 enqueued, 0 skipped", backfill.out().strip());
        JsonNode again = cli("--output", "json", "schedules", "backfill", name, "--from", "2026-06-01T00:00:00Z", "--to",
                "2026-06-01T02:00:00Z").exits(0).json();
        assertEquals(0, again.path("enqueued").asInt());
        assertEquals(3, again.path("skipped").asInt());
        Run tooMany = cli("schedules", "backfill", name, "--from", "2026-01-01T00:00:00Z", "--to", "2026-06-01T00:00:00Z").exits(2);
        assertTrue(tooMany.err().startsWith("delayq: 400 Bad Request: ") && tooMany.err().contains("(field to)"), tooMany.err());
        Run config = cli("schedules", "pause", "cli-tick").exits(1);
        assertTrue(config.err().contains("409"), config.err());
        assertTrue(cli("schedules", "delete", name).exits(0).out().startsWith("deleted " + name));
        assertTrue(cli("schedules", "delete", name).exits(1).err().contains("404"));
    }

    @Test
    void historyOfATopicOneLinePerMinute() {
        String t = HISTORY;
        cli("job", "enqueue", t, "--id", topic("h")).exits(0);
        Run r = cli("--output", "json", "history", t, "--minutes", "5");
        r.exits(0);
        List<JsonNode> minutes = r.lines();
        assertEquals(5, minutes.size(), r.out());
        Instant first = Instant.parse(minutes.get(0).path("minute").asText());
        Instant last = Instant.parse(minutes.get(4).path("minute").asText());
        assertEquals(Duration.ofMinutes(4), Duration.between(first, last));
        await(() -> cli("--output", "json", "history", t, "--minutes", "2").lines().stream()
                .mapToLong(m -> m.path("enqueued").asLong()).sum() >= 1, "the enqueue in the history of " + t);
        Run table = cli("history", t, "--minutes", "3").exits(0);
        assertTrue(table.out().lines().findFirst().orElseThrow()
                .matches("MINUTE +ENQUEUED +SUCCEEDED +FAILED +LATENESS P99"), table.out());
        assertEquals(4, table.out().lines().count(), table.out());
    }

    // ---- access, usage, help --------------------------------------------------------------------

    @Test
    void notAllowedIsExit3AndAViewerMayRead() {
        Run anonymous = run(List.of("--url", server.url(), "topics"), Map.of()).exits(3);
        assertTrue(anonymous.err().startsWith("delayq: 401 Unauthorized") && anonymous.err().contains("--token"),
                anonymous.err());
        run(List.of("--url", server.url(), "--user", "viewer:wrong", "topics"), Map.of()).exits(3);
        run(List.of("--url", server.url(), "--user", "viewer:v-pass", "topics"), Map.of()).exits(0);
        Run forbidden = run(List.of("--url", server.url(), "--user", "viewer:v-pass", "pause", "anything"), Map.of())
                .exits(3);
        assertTrue(forbidden.err().startsWith("delayq: 403 Forbidden"), forbidden.err());
        // The same from the environment: DELAYQ_URL, DELAYQ_USER, DELAYQ_TOKEN.
        run(List.of("pause", "env-topic"), Map.of("DELAYQ_URL", server.url(), "DELAYQ_USER", "viewer:v-pass")).exits(3);
        run(List.of("resume", "env-topic"), Map.of("DELAYQ_URL", server.url(), "DELAYQ_USER", "operator:o-pass")).exits(0);
        run(List.of("resume", "env-topic"), Map.of("DELAYQ_URL", server.url(), "DELAYQ_TOKEN", TOKEN)).exits(0);
    }

    @Test
    void badUsageIsExit2() {
        // Through the packaged jar: the exit code and the message as a shell sees them.
        Run unknown = jar("no-such-command").exits(2);
        assertTrue(unknown.err().contains("Unmatched argument at index 4: 'no-such-command'"), unknown.err());
        jar("job", "enqueue", "orders", "--delay", "soon").exits(2);
        // What the server refuses as input (400 naming the field) is exit 2 too, its detail on stderr.
        Run refused = jar("job", "enqueue", "Not A Topic").exits(2);
        assertTrue(refused.err().startsWith("delayq: 400 Bad Request: ") && refused.err().contains("(field topic)"),
                refused.err());
        // The rest in this JVM (the same command classes; none of them reaches the server).
        List<List<String>> usages = List.of(List.of("job", "get", "orders"),
                List.of("job", "enqueue", "orders", "--at", "tomorrow"),
                List.of("job", "enqueue", "orders", "--delay", "5m", "--at", "2030-01-01T00:00:00Z"),
                List.of("job", "enqueue", "orders", "--payload", "{not json"),
                List.of("job", "enqueue", "orders", "--if-exists", "sometimes"),
                List.of("job", "reschedule", "orders", "x"),
                List.of("job", "reschedule", "orders", "x", "--delay", "1m", "--at", "2030-01-01T00:00:00Z"),
                List.of("--output", "yaml", "topics"), List.of("--timeout", "0", "topics"),
                List.of("--token", TOKEN, "--user", "a:b", "topics"), List.of("--user", "nocolon", "topics"),
                List.of("--url", "not a url", "topics"), List.of("--url", "ftp://host", "topics"), List.of("job"),
                List.of(), List.of("dead", "purge", "failing"), List.of("dead", "purge", "failing", "x-1", "--all"),
                List.of("dead", "requeue", "failing", "--all", "--error", "x"), List.of("dead", "list", "t", "--limit", "many"),
                List.of("rate-limit", "t"), List.of("rate-limit", "t", "5", "--clear"), List.of("rate-limit", "t", "fast"),
                List.of("rate-limit", "t", "0"), List.of("max-in-flight", "t", "zero"), List.of("max-in-flight", "t", "0"),
                List.of("max-in-flight", "t"), List.of("group-rate-limit", "t"), List.of("group-rate-limit", "t", "5", "--clear"),
                List.of("group-rate-limit", "t", "fast"), List.of("group-rate-limit", "t", "0"),
                List.of("group-rate-limit", "t", "-1.5"), List.of("history", "t", "--minutes", "soon"), List.of("schedules", "trigger"),
                List.of("schedules", "put", "s", "--topic", "t"), List.of("schedules", "put", "s", "--every", "1h"),
                List.of("schedules", "put", "s", "--every", "1h", "--cron", "0 * * * * ?", "--topic", "t"),
                List.of("schedules", "put", "s", "--every", "1h", "--topic", "t", "--payload", "{not json"),
                List.of("schedules", "backfill", "s", "--from", "yesterday", "--to", "2030-01-01T00:00:00Z"),
                List.of("schedules", "backfill", "s", "--from", "2030-01-01T00:00:00Z"));
        for (List<String> args : usages) {
            StringWriter err = new StringWriter();
            CommandLine cmd = new CommandLine(new Delayq());
            cmd.setErr(new PrintWriter(err));
            cmd.setOut(new PrintWriter(new StringWriter()));
            assertEquals(2, cmd.execute(args.toArray(String[]::new)), args + ": " + err);
            assertTrue(!err.toString().isBlank(), args + " said nothing on stderr");
        }
    }

    @Test
    void everyCommandHasHelpWithAnExample() {
        // In this JVM (the same command classes as the jar): one process per command would cost a minute.
        List<String> paths = new ArrayList<>();
        collect(new CommandLine(new Delayq()), "", paths);
        assertTrue(paths.size() >= 20, paths.toString());
        for (String path : paths) {
            StringWriter out = new StringWriter();
            CommandLine cmd = new CommandLine(new Delayq());
            cmd.setOut(new PrintWriter(out));
            List<String> args = new ArrayList<>(path.isEmpty() ? List.of() : List.of(path.split(" ")));
            args.add("--help");
            assertEquals(0, cmd.execute(args.toArray(String[]::new)), path);
            String help = out.toString();
            assertTrue(help.startsWith("Usage: delayq" + (path.isEmpty() ? "" : " " + path)), help);
            assertTrue(help.contains("Example:\n  delayq "), path + ":\n" + help);
        }
        // And through the packaged jar, and the launcher script.
        Run jar = run(List.of("job", "enqueue", "--help"), Map.of()).exits(0);
        assertTrue(jar.out().contains("--if-exists") && jar.out().contains("Example:"), jar.out());
        Run launcher = exec(List.of("./delayq", "--help"), Map.of("JAVA_HOME", System.getProperty("java.home"))).exits(0);
        assertTrue(launcher.out().startsWith("Usage: delayq ") && launcher.out().contains("max-in-flight"), launcher.out());
        exec(List.of("./delayq", "--url", server.url(), "--token", TOKEN, "job", "get", "orders", "none"),
                Map.of("JAVA_HOME", System.getProperty("java.home"))).exits(1);
    }

    private static void collect(CommandLine cmd, String prefix, List<String> paths) {
        paths.add(prefix);
        cmd.getSubcommands().forEach((name, sub) -> collect(sub, (prefix.isEmpty() ? "" : prefix + " ") + name, paths));
    }

    @Test
    void completionPrintsABashScript() {
        Run r = jar("completion").exits(0);
        assertTrue(r.out().contains("complete -F _complete_delayq") && r.out().contains("max-in-flight")
                && r.out().contains("--if-exists"), r.out().substring(0, Math.min(500, r.out().length())));
        Run sourced = exec(List.of("bash", "-c", "source <(\"$0\" -jar \"$1\" completion) && complete -p delayq",
                ProcessHandle.current().info().command().orElse("java"), CLI_JAR.toString()), Map.of()).exits(0);
        assertTrue(sourced.out().contains("delayq"), sourced.out());
    }

    // ---- the guide -------------------------------------------------------------------------------

    /**
     * The shell blocks of docs/operations.md marked {@code covered-by: CliIT}, run word for word with
     * bash from the repository's root (so {@code cli/delayq} is the launcher), {@code localhost:8080}
     * replaced by this server's address, which {@code DELAYQ_URL} names too, and the operator token
     * in {@code DELAYQ_TOKEN}. Each must exit 0.
     */
    @Test
    void theGuidesExamplesRunAsWritten() throws IOException {
        deadJobs(DOCS, "pay-1", "pay-2", "pay-3");
        List<String> blocks = new ArrayList<>();
        List<String> lines = Files.readAllLines(GUIDE);
        for (int i = 0; i + 1 < lines.size(); i++) {
            if (lines.get(i).strip().equals("<!-- covered-by: CliIT -->") && lines.get(i + 1).strip().equals("```shell")) {
                StringBuilder b = new StringBuilder();
                for (int j = i + 2; !lines.get(j).strip().equals("```"); j++) {
                    b.append(lines.get(j)).append('\n');
                }
                blocks.add(b.toString());
            }
        }
        assertTrue(blocks.size() >= 2, "covered-by: CliIT blocks in " + GUIDE + ": " + blocks.size());
        String address = server.url().substring("http://".length());
        for (String block : blocks) {
            String script = "set -euo pipefail\ncd ..\n" + block.replace("localhost:8080", address);
            // A JVM start per command: 22 of them took more than 60 s on a loaded 2-core machine.
            Run r = exec(List.of("bash", "-c", script), Map.of("DELAYQ_URL", server.url(), "DELAYQ_TOKEN", TOKEN,
                    "JAVA_HOME", System.getProperty("java.home")), Duration.ofSeconds(240)).exits(0);
            System.out.println("ran:\n" + block + "output:\n" + r.out() + r.err());
        }
        assertEquals("scheduled", cli("--output", "json", "job", "get", "orders", "order-42").exits(0).json()
                .path("state").asText());
    }

    // ---- no answer ------------------------------------------------------------------------------

    @Test
    void noCommandHangsWithoutAServer() {
        int nobody = RedisProcess.freePort();
        Run refused = run(List.of("--url", "http://127.0.0.1:" + nobody, "topics"), Map.of()).exits(4);
        assertTrue(refused.err().contains("connection refused"), refused.err());
        Run frozen = run(List.of("--url", "http://127.0.0.1:" + silent.getLocalPort(), "--timeout", "2s", "job", "get",
                "orders", "x"), Map.of()).exits(4);
        assertTrue(frozen.err().contains("no answer") && frozen.err().contains("2s"), frozen.err());
        assertTrue(frozen.took().toSeconds() < 15, "took " + frozen.took());
        // A host that drops packets would hit the connect timeout: the same bound, its own message.
    }

    /** Last: Redis goes away (the server answers 503: exit 4), then the server itself (exit 4). */
    @Test
    @Order(Integer.MAX_VALUE)
    void unavailableIsExit4() throws Exception {
        redis.stop();
        Run r = jar("job", "enqueue", "orders", "--id", "while-redis-is-away");
        r.exits(4);
        assertTrue(r.err().startsWith("delayq: 503 "), r.err());
        server.kill();
        Run stopped = jar("topics").exits(4);
        assertTrue(stopped.err().contains("cannot connect"), stopped.err());
    }
}
