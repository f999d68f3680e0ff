import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.net.httpserver.HttpServer;

/**
 * The AOT cache's training run for the packaged server ({@code ./mvnw -B package -pl server -am
 * -Paot}): a single-file program ({@code java server/aot/Train.java <quarkus-app dir>}, JDK 25) that
 * starts its own redis-server (from PATH) and an HTTP receiver, starts
 * {@code quarkus-run.jar} with {@code -XX:AOTCacheOutput=app.aot}, drives the hot paths for at least
 * 30 s ({@code DELAYQ_AOT_TRAIN_SECONDS}; each phase also until its minimum of requests) and stops
 * the server with SIGTERM, at which the JVM writes {@code app.aot} beside the jar.
 * <p>
 * The workload is what a replica does in production: single-job {@code POST /jobs} from 64
 * clients (due now on an HTTP-target topic, so every job is also taken, posted to the receiver and
 * acked; and due in an hour, enqueue only), {@code POST /jobs/batch} (100 and 1,000 jobs), a tenth
 * of the deliveries answered 500 on their first attempt (fail, retry backoff, the retry taken and
 * acked), {@code GET /jobs/{topic}/{id}}, {@code GET /topics}, and the Prometheus scrape of
 * {@code /q/metrics} and {@code /q/health/ready} throughout. It fails (exit 1, the processes it started killed) when the
 * server does not start, a request answers 5xx (a 503 after five retries of the same request), a job is not delivered, or no cache is written.
 */
public class Train {
    static final String HOT = "aot-train-http";
    static final String LATER = "aot-train-later";
    static final String PAYLOAD = "\"xxxxxxxxxxxxxx\"";

    static final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .executor(Executors.newFixedThreadPool(4)).connectTimeout(Duration.ofSeconds(5)).build();
    static final AtomicLong requests = new AtomicLong();
    static final AtomicLong errors = new AtomicLong();
    /** 503 answers retried (not errors unless the retries ran out). */
    static final AtomicLong unavailable = new AtomicLong();
    static final AtomicLong hotSent = new AtomicLong();
    static volatile String firstError;
    static String base;

    public static void main(String[] args) {
        int status = 1;
        try {
            train(args);
            status = 0;
        } catch (Throwable e) {
            System.err.println("aot training FAILED: " + e);
            e.printStackTrace();
        }
        // Either way: the HTTP client's and the receiver's pools are not daemon threads.
        System.exit(status);
    }

    static void train(String[] args) throws Exception {
        Path app = Path.of(args.length > 0 ? args[0] : "server/target/quarkus-app").toAbsolutePath();
        int seconds = Integer.parseInt(System.getenv().getOrDefault("DELAYQ_AOT_TRAIN_SECONDS", "30"));
        Path jar = app.resolve("quarkus-run.jar");
        Path cache = app.resolve("app.aot");
        if (!Files.exists(jar)) {
            throw new IllegalStateException("no " + jar + ": package the server first");
        }
        Files.deleteIfExists(cache);
        int redisPort = freePort();
        int receiverPort = freePort();
        int httpPort = freePort();
        // Killed with this JVM too (Maven's timeout, a CI run stopped): the server JVM, the child JVM
        // it starts at exit to write the cache, redis-server.
        Thread reaper = new Thread(() -> ProcessHandle.current().descendants().forEach(ProcessHandle::destroyForcibly));
        Runtime.getRuntime().addShutdownHook(reaper);
        Process redis = new ProcessBuilder("redis-server", "--port", Integer.toString(redisPort), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        HttpServer receiver = null;
        Process server = null;
        try {
            receiver = receiver(receiverPort);
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Path log = app.resolve("aot-training.log");
            server = new ProcessBuilder(java, "-XX:AOTCacheOutput=" + cache, "-Dquarkus.http.port=" + httpPort,
                    "-Dquarkus.redis.hosts=redis://127.0.0.1:" + redisPort, "-Dquarkus.shutdown.delay-enabled=false",
                    "-Ddelayq.topics." + HOT + ".http.url=http://127.0.0.1:" + receiverPort + "/deliver",
                    "-Ddelayq.topics." + HOT + ".retry.initial=100ms", "-Ddelayq.topics." + HOT + ".retry.max=1s",
                    "-jar", jar.toString()).directory(app.toFile()).redirectErrorStream(true)
                    .redirectOutput(log.toFile()).start();
            base = "http://127.0.0.1:" + httpPort;
            long t0 = System.nanoTime();
            while (!ready()) {
                if (!server.isAlive() || System.nanoTime() - t0 > TimeUnit.SECONDS.toNanos(120)) {
                    throw new IllegalStateException("the server did not become ready (a JDK without -XX:AOTCacheOutput, "
                            + "which needs 25, stops it at once); its output is in " + log);
                }
                Thread.sleep(100);
            }
            System.out.printf("aot training: server ready in %.1f s, workload %d s%n", (System.nanoTime() - t0) / 1e9, seconds);
            workload(seconds);
            long hot = hotSent.get();
            long deadline = System.currentTimeMillis() + 60_000;
            while (delivered.size() < hot && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            System.out.printf("aot training: %,d requests, %,d jobs delivered (%,d answered 500 once), %d errors, %d 503 answers retried%n",
                    requests.get(), delivered.size(), failedOnce.size(), errors.get(), unavailable.get());
            if (errors.get() > 0) {
                throw new IllegalStateException(errors.get() + " requests failed, the first: " + firstError);
            }
            if (delivered.size() < hot) {
                throw new IllegalStateException(delivered.size() + " of " + hot + " HTTP-target jobs delivered");
            }
            server.destroy(); // SIGTERM: the JVM writes the cache as it exits
            if (!server.waitFor(180, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the server did not exit within 180 s of SIGTERM");
            }
            if (!Files.exists(cache)) {
                throw new IllegalStateException("no " + cache + " written (exit " + server.exitValue() + "); see " + log);
            }
            System.out.printf("aot training: %s, %,d MB%n", cache, Files.size(cache) >> 20);
        } finally {
            if (server != null && server.isAlive()) {
                server.descendants().forEach(ProcessHandle::destroyForcibly);
                server.destroyForcibly();
            }
            if (receiver != null) {
                receiver.stop(0);
            }
            redis.destroy();
            if (!redis.waitFor(10, TimeUnit.SECONDS)) {
                redis.destroyForcibly();
            }
        }
    }

    static final Set<String> delivered = ConcurrentHashMap.newKeySet();
    static final Set<String> failedOnce = ConcurrentHashMap.newKeySet();

    /**
     * The HTTP target: 204, except a tenth of the jobs (by a hash of the id: single and batch ids
     * alike) answered 500 on their first attempt.
     */
    static HttpServer receiver(int port) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 512);
        s.setExecutor(Executors.newFixedThreadPool(8));
        s.createContext("/deliver", ex -> {
            ex.getRequestBody().readAllBytes();
            String id = ex.getRequestHeaders().getFirst("X-Delayq-Job-Id");
            int code = 204;
            if (id != null && Math.floorMod(id.hashCode(), 10) == 0 && failedOnce.add(id)) {
                code = 500;
            } else if (id != null) {
                delivered.add(id);
            }
            ex.sendResponseHeaders(code, -1);
            ex.close();
        });
        s.start();
        return s;
    }

    static final AtomicLong singles = new AtomicLong();
    static final AtomicLong batches = new AtomicLong();

    /**
     * Three phases: single-job POSTs, batch POSTs, then single POSTs with reads. Each lasts its share
     * of {@code seconds} and at least until it made its minimum of requests (so that a busy machine
     * still trains the hot paths past the JIT's thresholds), at most three times its share.
     */
    static void workload(int seconds) throws Exception {
        AtomicInteger phase = new AtomicInteger();
        AtomicLong seq = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        // the scrape and the probes, all along
        threads.add(Thread.ofVirtual().start(() -> {
            while (phase.get() < 3) {
                call("GET", "/q/metrics", null);
                call("GET", "/q/health/ready", null);
                call("GET", "/topics", null);
                sleep(250);
            }
        }));
        for (int c = 0; c < 64; c++) {
            int client = c;
            threads.add(Thread.ofVirtual().start(() -> {
                int p;
                while ((p = phase.get()) < 3) {
                    long i = seq.incrementAndGet();
                    if (p != 1) {
                        // single-job enqueue: due now on the HTTP-target topic (taken, delivered, acked) or in an hour
                        boolean hot = i % 2 == 0;
                        if (hot) {
                            hotSent.incrementAndGet();
                        }
                        call("POST", "/jobs", "{\"topic\":\"" + (hot ? HOT : LATER) + "\",\"id\":\"s" + i + "\",\"delayMs\":"
                                + (hot ? 0 : 3_600_000) + ",\"payload\":" + PAYLOAD + "}");
                        singles.incrementAndGet();
                        if (p == 2 && i % 16 == 0) {
                            call("GET", "/jobs/" + LATER + "/s" + (i - 1), null);
                        }
                    } else if (client < 8) {
                        // batch enqueue: 100 jobs due now on the HTTP-target topic, or 1,000 due in an hour
                        boolean hot = client < 6;
                        int n = hot ? 100 : 1000;
                        StringBuilder b = new StringBuilder(n * 80).append('[');
                        for (int k = 0; k < n; k++) {
                            b.append(k == 0 ? "" : ",").append("{\"topic\":\"").append(hot ? HOT : LATER).append("\",\"id\":\"b")
                                    .append(i).append('-').append(k).append("\",\"delayMs\":").append(hot ? 0 : 3_600_000)
                                    .append(",\"payload\":").append(PAYLOAD).append('}');
                        }
                        if (hot) {
                            hotSent.addAndGet(n);
                        }
                        call("POST", "/jobs/batch", b.append(']').toString());
                        batches.incrementAndGet();
                    } else {
                        sleep(20);
                    }
                }
            }));
        }
        double[] share = { 0.4, 0.2, 0.4 };
        long[] minimum = { 30_000, 300, 15_000 };
        for (int p = 0; p < 3; p++) {
            long start = System.nanoTime();
            long s0 = singles.get(), b0 = batches.get();
            long least = (long) (share[p] * seconds * 1e9);
            while (true) {
                long took = System.nanoTime() - start;
                long made = p == 1 ? batches.get() - b0 : singles.get() - s0;
                if (took >= 3 * least || (took >= least && made >= minimum[p])) {
                    break;
                }
                Thread.sleep(100);
            }
            System.out.printf("aot training: phase %d done in %.1f s (%,d single, %,d batch requests so far)%n", p + 1,
                    (System.nanoTime() - start) / 1e9, singles.get(), batches.get());
            phase.incrementAndGet();
        }
        for (Thread t : threads) {
            t.join();
        }
    }

    static void call(String method, String path, String body) {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30));
        if (body != null) {
            r.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            r.method(method, HttpRequest.BodyPublishers.noBody());
        }
        try {
            HttpResponse<String> res = client.send(r.build(), HttpResponse.BodyHandlers.ofString());
            requests.incrementAndGet();
            // A 503 says "not now" (Redis slow to answer on a loaded machine): the same request
            // again, as a client would (ids make an enqueue idempotent), a few times before it counts.
            for (int again = 0; res.statusCode() == 503 && again < 5; again++) {
                unavailable.incrementAndGet();
                Thread.sleep(200L << again);
                res = client.send(r.build(), HttpResponse.BodyHandlers.ofString());
                requests.incrementAndGet();
            }
            if (res.statusCode() >= 400 && !(path.startsWith("/jobs/") && res.statusCode() == 404)) {
                errors.incrementAndGet();
                if (firstError == null) {
                    firstError = method + " " + path + ": " + res.statusCode() + " " + res.body();
                }
            }
        } catch (IOException | InterruptedException e) {
            errors.incrementAndGet();
            if (firstError == null) {
                firstError = method + " " + path + ": " + e;
            }
        }
    }

    static boolean ready() {
        try {
            return client.send(HttpRequest.newBuilder(URI.create(base + "/q/health/ready")).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
