package io.delayq.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.eclipse.microprofile.config.ConfigProvider;

import io.delayq.dev.RedisProcess;

/**
 * Scenario {@code bodies} (on request only): the packaged server ({@code server/target/quarkus-app},
 * as {@code server-cold} starts it) on a 512 MB heap receives 32 maximum-size batches at once: 1,000
 * jobs of a 60,000-byte payload each, about 60 MB per body (the security probe's case, which
 * answered twelve 500s with OutOfMemoryError when the body limit was a flat 80 MB and nothing
 * bounded the bodies in flight). Prints how many answered 200, 503, 500 or otherwise, whether the
 * server logged an OutOfMemoryError, and the peak of its heap (its {@code jvm_memory_used_bytes}
 * of the heap, read every 100 ms). ok: no 500, no OutOfMemoryError, at least one 200, and the
 * server still ready afterwards. BENCH_BODIES_CONCURRENT, BENCH_BODIES_HEAP change it.
 */
final class BodiesScenario {
    static final String TOPIC = "bench-bodies";
    static final int JOBS = 1000;
    static final int PAYLOAD_BYTES = 60_000;

    private final BenchApp app;
    private final Path dir;

    BodiesScenario(BenchApp app) {
        this.app = app;
        this.dir = Path.of(System.getenv().getOrDefault("BENCH_SERVER_APP", "server/target/quarkus-app")).toAbsolutePath();
    }

    void run() throws Exception {
        if (!Files.exists(dir.resolve("quarkus-run.jar"))) {
            throw new IllegalStateException("no " + dir.resolve("quarkus-run.jar") + ": ./mvnw -B package -pl server -am");
        }
        int concurrent = Integer.parseInt(System.getenv().getOrDefault("BENCH_BODIES_CONCURRENT", "32"));
        String heap = System.getenv().getOrDefault("BENCH_BODIES_HEAP", "512m");
        int port = RedisProcess.freePort();
        Path log = Files.createTempFile("delayq-bodies", ".log");
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx" + heap,
                "-Dquarkus.http.port=" + port,
                "-Dquarkus.redis.hosts=" + ConfigProvider.getConfig().getValue("quarkus.redis.hosts", String.class),
                "-Dquarkus.shutdown.delay-enabled=false", "-jar", dir.resolve("quarkus-run.jar").toString());
        Process server = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        String base = "http://127.0.0.1:" + port;
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build();
        // The batches' own client: HTTP/1.1, one connection per request, as curl or a typical
        // producer sends a large body. The heap sampler and the readiness check keep their own
        // client, so a failure of one does not blind the other.
        HttpClient senderClient = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(30)).build();
        try {
            awaitReady(http, base, server);
            Map<String, AtomicInteger> statuses = new ConcurrentHashMap<>();
            Map<String, AtomicInteger> errors = new ConcurrentHashMap<>();
            AtomicLong peak = new AtomicLong();
            AtomicBoolean loading = new AtomicBoolean(true);
            Thread sampler = Thread.ofPlatform().daemon().start(() -> {
                while (loading.get()) {
                    long used = heapUsed(http, base);
                    peak.accumulateAndGet(used, Math::max);
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            long idle = heapUsed(http, base);
            CountDownLatch start = new CountDownLatch(1);
            List<Thread> senders = new ArrayList<>();
            long t0 = System.nanoTime();
            // Four distinct bodies, sent in turn (32 of their own would not fit this JVM's heap):
            // every request's body is read and parsed by the server all the same.
            byte[][] bodies = new byte[Math.min(4, concurrent)][];
            for (int i = 0; i < bodies.length; i++) {
                bodies[i] = batch(i);
            }
            for (int i = 0; i < concurrent; i++) {
                byte[] body = bodies[i % bodies.length];
                senders.add(Thread.ofPlatform().start(() -> {
                    String outcome;
                    try {
                        start.await();
                        HttpResponse<Void> r = senderClient.send(HttpRequest.newBuilder(URI.create(base + "/jobs/batch"))
                                .timeout(Duration.ofMinutes(5)).header("Content-Type", "application/json")
                                .POST(streamed(body)).build(), HttpResponse.BodyHandlers.discarding());
                        outcome = Integer.toString(r.statusCode());
                    } catch (IOException e) {
                        outcome = "io-error";
                        // What the client saw, to tell a reset from a timeout or a refused connection.
                        errors.computeIfAbsent(e.getClass().getSimpleName() + ": " + e.getMessage(), k -> new AtomicInteger())
                                .incrementAndGet();
                    } catch (InterruptedException e) {
                        outcome = "interrupted";
                    }
                    statuses.computeIfAbsent(outcome, k -> new AtomicInteger()).incrementAndGet();
                }));
            }
            start.countDown();
            for (Thread t : senders) {
                t.join();
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            loading.set(false);
            sampler.join();
            boolean oom = Files.readString(log, StandardCharsets.UTF_8).contains("OutOfMemoryError");
            boolean readyAfter = ready(http, base);
            int ok200 = count(statuses, "200"), u503 = count(statuses, "503"), e500 = count(statuses, "500");
            int other = statuses.values().stream().mapToInt(AtomicInteger::get).sum() - ok200 - u503 - e500;
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("scenario", "bodies");
            r.put("params", Map.of("concurrent", concurrent, "jobs_per_batch", JOBS, "payload_bytes", PAYLOAD_BYTES,
                    "body_bytes", bodies[0].length, "heap", heap));
            r.put("status_200", ok200);
            r.put("status_503", u503);
            r.put("status_500", e500);
            r.put("other", other);
            r.put("statuses", new java.util.TreeMap<>(statuses));
            r.put("io_errors", new java.util.TreeMap<>(errors));
            r.put("seconds", BenchApp.round(seconds, 1));
            r.put("heap_idle_mb", idle / (1 << 20));
            r.put("heap_peak_mb", peak.get() / (1 << 20));
            r.put("out_of_memory", oom);
            r.put("ready_after", readyAfter);
            r.put("ok", e500 == 0 && !oom && ok200 > 0 && readyAfter);
            app.emit(r);
            System.err.printf("  bodies: %d concurrent batches of %,d bytes on -Xmx%s: 200 x%d, 503 x%d, 500 x%d, other x%d"
                    + " in %.1f s; heap idle %d MB, peak %d MB; OutOfMemoryError %s; ready after %s%n", concurrent,
                    bodies[0].length, heap, ok200, u503, e500, other, seconds, idle >> 20, peak.get() >> 20, oom, readyAfter);
        } finally {
            server.destroy();
            if (!server.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)) {
                server.destroyForcibly().waitFor();
            }
            app.flush();
        }
    }

    /** Batch {@code n}: JOBS jobs an hour ahead, each with a payload of PAYLOAD_BYTES bytes of JSON. */
    static byte[] batch(int n) {
        String filler = "x".repeat(PAYLOAD_BYTES - 8);
        StringBuilder s = new StringBuilder(JOBS * (PAYLOAD_BYTES + 80)).append('[');
        for (int i = 0; i < JOBS; i++) {
            if (i > 0) {
                s.append(',');
            }
            s.append("{\"topic\":\"").append(TOPIC).append("\",\"id\":\"b").append(n).append('-').append(i)
                    .append("\",\"delayMs\":3600000,\"payload\":{\"d\":\"").append(filler).append("\"}}");
        }
        return s.append(']').toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The body streamed from the shared array with its length. BodyPublishers.ofByteArray copies
     * the whole array into buffers for each request: 32 copies of 60 MB ran this JVM (-Xmx2g) out
     * of heap, and the requests it happened to lose were reported as "IOException: Java heap
     * space" (the 2 connection errors of the first runs: the server was not at fault).
     */
    private static HttpRequest.BodyPublisher streamed(byte[] body) {
        return HttpRequest.BodyPublishers.fromPublisher(
                HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(body)), body.length);
    }

    private static int count(Map<String, AtomicInteger> statuses, String status) {
        AtomicInteger n = statuses.get(status);
        return n == null ? 0 : n.get();
    }

    /** The server's heap in use (sum of its heap pools), 0 when it does not answer. */
    private static long heapUsed(HttpClient http, String base) {
        try {
            String text = http.send(HttpRequest.newBuilder(URI.create(base + "/q/metrics")).timeout(Duration.ofSeconds(5))
                    .build(), HttpResponse.BodyHandlers.ofString()).body();
            long sum = 0;
            for (String line : text.split("\n")) {
                if (line.startsWith("jvm_memory_used_bytes{") && line.contains("area=\"heap\"")) {
                    sum += (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
            return sum;
        } catch (IOException | RuntimeException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
    }

    private static boolean ready(HttpClient http, String base) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create(base + "/q/health/ready")).timeout(Duration.ofSeconds(10))
                    .build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    private static void awaitReady(HttpClient http, String base, Process server) throws InterruptedException {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (!ready(http, base)) {
            if (!server.isAlive()) {
                throw new IllegalStateException("the server exited with " + server.exitValue());
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the server was not ready within 120 s");
            }
            Thread.sleep(50);
        }
    }
}
