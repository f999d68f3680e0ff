package io.delayq.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.dev.RedisProcess;
import io.delayq.security.AccessRules;
import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.Topics;

/**
 * The packaged server's OpenAPI document is one a generator can be trusted with, checked as a new
 * user would: Redocly CLI's recommended rules pass with no error or warning, and a client
 * generated from it (openapi-typescript + openapi-fetch, type-checked by tsc) enqueues, reads,
 * cancels, lists and requeues dead jobs against the running server, and reads a 4xx as its
 * problem body. The npm packages are pinned in {@code src/test/openapi-client/package-lock.json}
 * and installed into {@code target/openapi-client} (npm's cache makes a rerun take seconds).
 */
class OpenApiClientIT extends OwnRedisTest {
    private static final Path SOURCES = Path.of("src", "test", "openapi-client");
    private static final Path WORK = Path.of("target", "openapi-client");
    private static final String TOKEN = "openapi-client-it-token";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOPIC = Topics.fresh("client");
    private static final String DYING = Topics.fresh("client-dying");
    private static AppProcess server;
    private static String document;

    @BeforeAll
    static void startServerAndInstallTools() throws Exception {
        // A target nobody listens on: every call is refused, so a job with one attempt dies.
        String nowhere = "http://127.0.0.1:" + RedisProcess.freePort() + "/";
        server = AppProcess.start("openapi", redis.port(), Map.of("delayq.api.token", TOKEN,
                "delayq.topics." + DYING + ".http.url", nowhere));
        Files.createDirectories(WORK);
        for (String file : List.of("package.json", "package-lock.json", "tsconfig.json", "client.ts")) {
            Files.copy(SOURCES.resolve(file), WORK.resolve(file), StandardCopyOption.REPLACE_EXISTING);
        }
        run(300, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error");
        document = server.get("/q/openapi");
        Files.writeString(WORK.resolve("openapi.yaml"), document);
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void documentPassesRedoclysRecommendedRulesWithoutAWarning() throws Exception {
        String out = run(120, "node_modules/.bin/redocly", "lint", "openapi.yaml");
        assertTrue(out.contains("Your API description is valid"), out);
        assertFalse(out.matches("(?s).*You have \\d+ warnings?.*"), "Redocly warns:\n" + out);
    }

    /**
     * What the lint cannot know: every operation has its line in {@link OpenApiContract}'s table
     * (so a meaningful operationId), requires the role {@link AccessRules} enforces, and
     * documents each error status as a problem body.
     */
    @Test
    void everyOperationHasItsIdItsRoleAndProblemBodies() throws Exception {
        JsonNode doc = JSON.readTree(server.get("/q/openapi?format=json"));
        assertEquals("Apache-2.0", doc.path("info").path("license").path("name").asText());
        assertFalse(doc.path("servers").isEmpty(), "no servers");
        assertTrue(doc.path("components").path("securitySchemes").has(OpenApiContract.BASIC));
        assertTrue(doc.path("components").path("securitySchemes").has(OpenApiContract.BEARER));
        List<String> wrong = new ArrayList<>();
        Set<String> ids = new HashSet<>();
        Set<String> seen = new TreeSet<>();
        doc.path("paths").properties().forEach(path -> path.getValue().properties().forEach(entry -> {
            String method = entry.getKey().toUpperCase();
            if (!Set.of("GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS").contains(method)) {
                return;
            }
            JsonNode op = entry.getValue();
            String where = method + " " + path.getKey();
            String id = op.path("operationId").asText();
            seen.add(id);
            if (OpenApiContract.find(method, path.getKey()).isEmpty()) {
                wrong.add(where + ": no line in OpenApiContract.OPERATIONS (operationId " + id + ")");
            }
            if (!ids.add(id)) {
                wrong.add(where + ": operationId " + id + " used twice");
            }
            String role = AccessRules.required(method, path.getKey().replaceAll("\\{[^}]+}", "x")).roleName();
            if (!op.path("description").asText().contains("Needs role `" + role + "`")) {
                wrong.add(where + ": description does not name the role " + role);
            }
            if (op.path("security").size() < 2 || !op.path("security").get(0).path(OpenApiContract.BASIC).toString()
                    .contains(role)) {
                wrong.add(where + ": security " + op.path("security") + " does not require " + role);
            }
            op.path("responses").properties().forEach(r -> {
                if (r.getKey().matches("[45]\\d\\d") && !r.getValue().path("content").has("application/problem+json")) {
                    wrong.add(where + ": " + r.getKey() + " has no application/problem+json body");
                }
            });
            for (String status : List.of("401", "403", "503")) {
                if (!op.path("responses").has(status)) {
                    wrong.add(where + ": no " + status);
                }
            }
        }));
        assertEquals(List.of(), wrong);
        assertTrue(seen.containsAll(Set.of("enqueueJob", "enqueueBatch", "getJob", "cancelJob", "rescheduleJob",
                "listTopics", "listDeadJobs", "requeueDeadJob", "purgeDeadJob", "pauseTopic", "getSchedule")),
                "operationIds " + seen);
    }

    @Test
    void generatedTypeScriptClientDrivesTheApiAndReadsProblems() throws Exception {
        run(120, "node_modules/.bin/openapi-typescript", "openapi.yaml", "-o", "schema.d.ts");
        run(120, "node_modules/.bin/tsc", "-p", ".");
        String out = run(120, "node", "out/client.js", server.baseUrl(), TOKEN, TOPIC, DYING);
        JsonNode seen = JSON.readTree(out.lines().reduce((a, b) -> b).orElseThrow());

        assertEquals(201, seen.path("enqueue").path("status").asInt(), out);
        assertEquals("scheduled", seen.path("enqueue").path("state").asText());
        assertEquals(200, seen.path("get").path("status").asInt());
        assertEquals("scheduled", seen.path("get").path("state").asText());
        assertEquals(204, seen.path("cancel").path("status").asInt());

        JsonNode notFound = seen.path("notFound");
        assertEquals(404, notFound.path("status").asInt());
        assertTrue(notFound.path("type").asText().startsWith("application/problem+json"), notFound.toString());
        assertEquals(404, notFound.path("problem").path("status").asInt(), "the problem body, parsed: " + notFound);
        assertTrue(notFound.path("problem").path("detail").asText().contains("no job"), notFound.toString());
        assertEquals(400, seen.path("invalid").path("status").asInt());
        assertEquals("delayMs", seen.path("invalid").path("problem").path("field").asText(), seen.toString());
        assertEquals(401, seen.path("unauthorized").path("problem").path("status").asInt(), seen.toString());

        assertEquals(1, seen.path("dead").size(), "the job that died, listed: " + seen);
        assertFalse(seen.path("dead").get(0).path("lastError").asText().isEmpty(), seen.toString());
        assertEquals(200, seen.path("requeue").path("status").asInt(), seen.toString());
        assertEquals("scheduled", seen.path("requeue").path("state").asText());
        assertTrue(seen.path("topics").toString().contains(DYING), seen.toString());
    }

    /** Runs a command in {@link #WORK}; its output, or a failure with it. */
    private static String run(int timeoutSeconds, String... command) throws IOException, InterruptedException {
        Path log = Files.createTempFile("openapi-client", ".log");
        Process p = new ProcessBuilder(command).directory(WORK.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        boolean ended = p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly();
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        Files.delete(log);
        assertTrue(ended, String.join(" ", command) + " did not end in " + timeoutSeconds + " s:\n" + out);
        assertEquals(0, p.exitValue(), String.join(" ", command) + " failed:\n" + out);
        return out;
    }
}
