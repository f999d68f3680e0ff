package io.delayq.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;

/** A production start with no credential configured warns that the API is open; one with a credential does not. */
class AccessWarningIT extends OwnRedisTest {
    private static final String WARNING = "delayq's REST API and dashboard are OPEN to anyone";

    @Test
    void anOpenProductionStartLogsAWarning() {
        try (AppProcess app = AppProcess.start("open", redis.port(), Map.of())) {
            String log = app.logText();
            assertTrue(log.contains("WARN") && log.contains(WARNING), log);
            assertTrue(app.post("/jobs", "{\"topic\":\"warned\"}").statusCode() == 201, "and the API is open");
        }
    }

    @Test
    void aProductionStartWithACredentialDoesNot() throws Exception {
        try (AppProcess token = AppProcess.start("token", redis.port(), Map.of("delayq.api.token", "x"));
                AppProcess users = AppProcess.start("users", redis.port(),
                        Map.of("quarkus.security.users.embedded.users.alice", sha512Hex("alice:delayq:s3cret"),
                                "quarkus.security.users.embedded.roles.alice", "delayq-viewer"))) {
            assertFalse(token.logText().contains(WARNING), token.logText());
            assertFalse(users.logText().contains(WARNING), users.logText());
            assertTrue(users.getResponse("/topics").statusCode() == 401, "embedded users close the API");
            // The hash docs/security.md shows: hex SHA-512 of user:realm:password, the server's realm being delayq.
            HttpResponse<String> alice = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create(users.baseUrl() + "/topics")).header("Authorization", "Basic " + Base64.getEncoder()
                            .encodeToString("alice:s3cret".getBytes(StandardCharsets.UTF_8))).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, alice.statusCode(), alice.body());
        }
    }

    private static String sha512Hex(String s) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-512").digest(s.getBytes(StandardCharsets.UTF_8)));
    }
}
