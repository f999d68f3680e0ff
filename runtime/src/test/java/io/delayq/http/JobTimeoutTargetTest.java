package io.delayq.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.Job;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;

/**
 * A job's own timeout ({@code timeoutMs} at enqueue) in place of its HTTP target's
 * {@code http.timeout}: the call to a target that never answers is aborted at the job's timeout.
 */
class JobTimeoutTargetTest {
    @Test
    void theJobsOwnTimeoutAbortsACallLongBeforeTheTargetsTimeout() throws Exception {
        Vertx vertx = Vertx.vertx();
        AtomicInteger calls = new AtomicInteger();
        // Reads each call and never answers it.
        HttpServer server = vertx.createHttpServer().requestHandler(req -> calls.incrementAndGet());
        server.listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        HttpTargetHandler target = new HttpTargetHandler(vertx, "http://127.0.0.1:" + server.actualPort() + "/hook",
                Duration.ofMinutes(10), 4, false, null);
        try {
            Job job = new Job("j", "t", 1, Instant.now(), "{}", new ObjectMapper(), null, () -> false, 300L);
            long start = System.nanoTime();
            CompletableFuture<Void> call = target.handle(job, () -> () -> {
            }).toCompletableFuture();
            ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> call.get(120, TimeUnit.SECONDS));
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            HttpTargetHandler.HttpTargetException h = assertInstanceOf(HttpTargetHandler.HttpTargetException.class,
                    e.getCause());
            assertTrue(h.timedOut() && h.mayStillRun(), h.getMessage());
            assertTrue(h.getMessage().contains("within 300 ms"), h.getMessage());
            // the target's own timeout is 10 min: ended by the job's, with a loaded machine's slack
            assertTrue(tookMs < 60_000, "took " + tookMs + " ms");
            assertEquals(1, calls.get(), "the call reached the target");
            assertEquals(300, target.minRetryDelayMs(h), "a retry waits the job's timeout, not http.timeout");
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }
}
