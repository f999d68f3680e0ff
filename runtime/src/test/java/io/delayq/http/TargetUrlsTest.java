package io.delayq.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import io.delayq.core.Job;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;

/**
 * A target URL's user info and query values are never shown (the probe's
 * {@code http://hookuser:HookPass99@host/hook?sig=QuerySecret42}), and its user info reaches the
 * target as HTTP Basic.
 */
class TargetUrlsTest {
    static final String PROBE = "http://hookuser:HookPass99@host/hook?sig=QuerySecret42";

    @Test
    void hidesUserInfoAndQueryValues() {
        assertEquals("http://***@host/hook?sig=***", TargetUrls.redact(PROBE));
        assertEquals("https://***@h.example:8443/a/b?k=***&flag&x=***",
                TargetUrls.redact("https://u@h.example:8443/a/b?k=v&flag&x=#frag"));
        assertEquals("http://[::1]:9/x", TargetUrls.redact("http://[::1]:9/x"));
    }

    @Test
    void leavesAUrlWithoutSecretsAsItIs() {
        assertEquals("http://127.0.0.1:8080/hook", TargetUrls.redact("http://127.0.0.1:8080/hook"));
        assertEquals("https://example.com", TargetUrls.redact("https://example.com"));
    }

    @Test
    void aMalformedSettingIsCutBeforeItsSecret() {
        String bad = "http://user:Pass 99@host/x?sig=Secret";
        assertFalse(TargetUrls.redact(bad).contains("Pass"), TargetUrls.redact(bad));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TargetUrls.parse("delayq.topics.t.dead-url", bad));
        assertFalse(e.getMessage().contains("Pass") || e.getMessage().contains("Secret"), e.getMessage());
        assertTrue(e.getMessage().startsWith("delayq.topics.t.dead-url"), e.getMessage());
    }

    @Test
    void userInfoBecomesBasicAuthorization() {
        assertEquals("Basic aG9va3VzZXI6SG9va1Bhc3M5OQ==", TargetUrls.basicAuthorization(URI.create(PROBE)).orElseThrow());
        // Percent-encoded as a URL needs it: "p@ss+w:rd" is sent as it was meant.
        String header = TargetUrls.basicAuthorization(URI.create("http://u%20x:p%40ss+w%3Ard@h/")).orElseThrow();
        assertEquals("u x:p@ss+w:rd", new String(java.util.Base64.getDecoder().decode(header.substring(6))));
        assertTrue(TargetUrls.basicAuthorization(URI.create("http://h/x?a=b")).isEmpty());
    }

    @Test
    void theTargetGetsBasicAndNothingShownCarriesTheSecrets() throws Exception {
        Vertx vertx = Vertx.vertx();
        try {
            CompletableFuture<String> received = new CompletableFuture<>();
            HttpServer server = vertx.createHttpServer().requestHandler(req -> {
                received.complete(req.getHeader("Authorization") + " " + req.uri());
                req.response().setStatusCode(500).end();
            });
            int port = server.listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS)
                    .actualPort();
            HttpTargetHandler target = new HttpTargetHandler(vertx,
                    "http://hookuser:HookPass99@127.0.0.1:" + port + "/hook?sig=QuerySecret42", Duration.ofSeconds(30), 1,
                    false, null);
            // What GET /topics shows as servedBy, the Dev UI and the start-up log.
            assertEquals("HTTP target http://***@127.0.0.1:" + port + "/hook?sig=***", target.describe());
            Job job = new Job("j1", "t3", 1, Instant.now(), "{}", null);
            ExecutionException failed = assertThrows(ExecutionException.class,
                    () -> target.handle(job, () -> () -> {
                    }).toCompletableFuture().get(30, TimeUnit.SECONDS));
            // What becomes the job's lastError.
            String error = failed.getCause().getMessage();
            assertFalse(error.contains("HookPass99") || error.contains("QuerySecret42") || error.contains("hookuser"), error);
            assertEquals("Basic aG9va3VzZXI6SG9va1Bhc3M5OQ== /hook?sig=QuerySecret42", received.get(30, TimeUnit.SECONDS));
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }
}
