package io.delayq.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.delayq.core.NewJob;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;

/**
 * The HTTP-target scenarios ({@code http}: HTTP/1.1 keep-alive, {@code h2c}: HTTP/2 over cleartext),
 * against {@link HttpReceiver} in a process of its own. Each prints these lines:
 * <ol>
 * <li>{@code http-ceiling}: the receiver's own ceiling in this run, a plain load client (Vert.x on
 * one event loop, in the benchmark JVM, same protocol, 256 calls in flight: HTTP/1.1 pipelined 4
 * deep on 64 connections, h2c streams on 2) posting to it as fast as it answers; measured before
 * the burst and again after the spread (the higher counts);</li>
 * <li>{@code http-burst}: N jobs due at once delivered to the receiver: throughput, and what share
 * of the ceiling it is;</li>
 * <li>{@code http-spread-5k}: 5,000 jobs/s offered (jobs due evenly over the window): lateness;</li>
 * <li>{@code http-summary}: the ceiling, the burst's rate and its share of the ceiling, the
 * spread's lateness, delayq CPU ms per job in each, lost and duplicated jobs;</li>
 * <li>HTTP/1.1 only, {@code http-signing}: what signing costs per call, in the same run: a burst
 * to the same receiver unsigned and one signed with two keys ({@code http.signing-keys}), delayq
 * CPU µs per job of each and the difference, and the signing step alone
 * ({@code RequestSigner.sign} with the bench payload, 1 and 2 keys, µs per call).</li>
 * </ol>
 * delayq CPU per job ({@code delayq_dispatch_cpu_ms_per_1k}, from the first due time to the
 * end) is the benchmark JVM alone; the receiver's CPU is not in it. Lateness is the receiver's
 * arrival time (same host clock) less the job's due time.
 */
final class HttpScenario {
    /** Started by {@link BenchMain} before Quarkus (the topics' URLs point at it). */
    static HttpReceiver receiver;
    /** Calls in flight of the load client that measures the receiver's ceiling. */
    private static final int IN_FLIGHT = 256;
    /** The HTTP/1.1 target signed with two keys. */
    static final String SIGNED_TOPIC = "bench-http-signed";
    /** Two 32-byte keys, as a rotation has them. */
    static final String BENCH_KEYS = "bench-key-one-0123456789abcdef01,bench-key-two-fedcba9876543210fe";
    private final BenchApp app;

    HttpScenario(BenchApp app) {
        this.app = app;
    }

    void run(String topic, String protocol) throws Exception {
        boolean smoke = app.o.smoke();
        Thread drain = Thread.ofPlatform().daemon().name("bench-receiver-drain").start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                receiver.drainInto(app.recorder);
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        try {
            warmUp(topic, smoke ? 500 : 20_000);
            int seconds = smoke ? 1 : 3;
            double ceilingBefore = ceiling(protocol, seconds);
            int burst = smoke ? 300 : 30_000;
            app.pendingFields.put("protocol", protocol);
            app.pendingFields.put("receiver_ceiling_rps", Math.round(ceilingBefore));
            app.schedule("http-burst" + suffix(protocol), topic, burst, 0, smoke ? 2000 : 5000, true, false, 0);
            Map<String, Object> b = app.results.get(app.results.size() - 1);
            int windowS = smoke ? 2 : 10;
            int rate = smoke ? 100 : 5000;
            app.pendingFields.put("protocol", protocol);
            app.pendingFields.put("offered_jps", rate);
            app.schedule("http-spread-" + (smoke ? "100" : "5k") + suffix(protocol), topic, rate * windowS, windowS * 1000L,
                    smoke ? 2000 : 5000, false, false, 0);
            Map<String, Object> sp = app.results.get(app.results.size() - 1);
            // Measured again: on a shared machine one measurement can fall in a busy moment.
            double ceiling = Math.max(ceilingBefore, ceiling(protocol, seconds));
            summary(protocol, ceiling, rate, b, sp);
            if (!h2c(protocol)) {
                signingCost(topic, smoke);
            }
        } finally {
            drain.interrupt();
            drain.join();
        }
    }

    /** One line with the figures the HTTP path is judged by. */
    private void summary(String protocol, double ceiling, int offered, Map<String, Object> burst,
            Map<String, Object> spread) {
        double burstJps = ((Number) burst.get("throughput_jps")).doubleValue();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "http-summary" + suffix(protocol));
        r.put("params", Map.of("protocol", protocol, "burst_n", burst.get("processed"), "spread_offered_jps", offered));
        r.put("ok", Boolean.TRUE.equals(burst.get("ok")) && Boolean.TRUE.equals(spread.get("ok")));
        r.put("receiver_ceiling_rps", Math.round(ceiling));
        r.put("burst_jps", Math.round(burstJps));
        r.put("burst_share_of_ceiling", BenchApp.round(burstJps / Math.max(1, ceiling), 2));
        r.put("spread_late_ms", spread.get("late_ms"));
        r.put("spread_throughput_jps", spread.get("throughput_jps"));
        r.put("delayq_cpu_ms_per_job_burst", BenchApp.round(((Number) burst.get("delayq_dispatch_cpu_ms_per_1k")).doubleValue() / 1000, 3));
        r.put("delayq_cpu_ms_per_job_spread", BenchApp.round(((Number) spread.get("delayq_dispatch_cpu_ms_per_1k")).doubleValue() / 1000, 3));
        r.put("lost", ((Number) burst.get("lost")).longValue() + ((Number) spread.get("lost")).longValue());
        r.put("dup", ((Number) burst.get("dup")).longValue() + ((Number) spread.get("dup")).longValue());
        r.put("throughput_jps", Math.round(burstJps));
        app.emit(r);
    }

    private static boolean h2c(String protocol) {
        return protocol.equals("h2c");
    }

    /**
     * Signing's cost per call, same run, same receiver: bursts unsigned and signed (two keys) in
     * the order unsigned, signed, signed, unsigned, each kind's CPU averaged over its two (the JIT
     * still speeds the process up from burst to burst: in that order a steady drift cancels out),
     * and the signer alone in a tight loop, which is the figure to quote: the bursts' difference
     * is within their noise.
     */
    private void signingCost(String unsigned, boolean smoke) throws Exception {
        warmUp(SIGNED_TOPIC, smoke ? 300 : 10_000);
        int n = smoke ? 300 : 20_000;
        double[] cpu = new double[2];
        double[] jps = new double[2];
        int[] order = { 0, 1, 1, 0 };
        for (int i = 0; i < order.length; i++) {
            int kind = order[i];
            app.pendingFields.put("protocol", "http/1.1");
            app.pendingFields.put("signed", kind == 1);
            app.schedule("http-burst-" + (kind == 1 ? "signed" : "unsigned") + "-" + (i < 2 ? 1 : 2),
                    kind == 1 ? SIGNED_TOPIC : unsigned, n, 0, smoke ? 2000 : 4000, true, false, 0);
            Map<String, Object> r = app.results.get(app.results.size() - 1);
            cpu[kind] += ((Number) r.get("delayq_dispatch_cpu_ms_per_1k")).doubleValue() / 2; // ms per 1k = µs per job
            jps[kind] += ((Number) r.get("throughput_jps")).doubleValue() / 2;
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "http-signing");
        r.put("params", Map.of("protocol", "http/1.1", "burst_n", n, "keys", 2, "payload_bytes", BenchApp.PAYLOAD.length()));
        r.put("ok", cpu[0] > 0 && cpu[1] > 0);
        r.put("sign_us_per_call_1key", BenchApp.round(signNanos(1, smoke) / 1000, 2));
        r.put("sign_us_per_call_2keys", BenchApp.round(signNanos(2, smoke) / 1000, 2));
        r.put("delayq_cpu_us_per_job_unsigned", BenchApp.round(cpu[0], 1));
        r.put("delayq_cpu_us_per_job_signed", BenchApp.round(cpu[1], 1));
        r.put("signing_cpu_us_per_job", BenchApp.round(cpu[1] - cpu[0], 1));
        r.put("burst_jps_unsigned", Math.round(jps[0]));
        r.put("burst_jps_signed", Math.round(jps[1]));
        r.put("throughput_jps", Math.round(jps[1]));
        app.emit(r);
    }

    /** Nanoseconds per {@code RequestSigner.sign} of the bench payload with {@code keys} keys. */
    private static double signNanos(int keys, boolean smoke) {
        String configured = keys == 1 ? BENCH_KEYS.substring(0, BENCH_KEYS.indexOf(',')) : BENCH_KEYS;
        io.delayq.http.RequestSigner signer = io.delayq.http.RequestSigner.of("bench", java.util.Optional.of(configured))
                .orElseThrow();
        byte[] body = BenchApp.PAYLOAD.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        int warm = smoke ? 20_000 : 200_000, measured = smoke ? 20_000 : 500_000;
        long sink = 0;
        for (int i = 0; i < warm; i++) {
            sink += signer.sign(1_764_640_000_000L + i, SIGNED_TOPIC, "job-" + i, 1, body).length();
        }
        long t0 = System.nanoTime();
        for (int i = 0; i < measured; i++) {
            sink += signer.sign(1_764_640_000_000L + i, SIGNED_TOPIC, "job-" + i, 1, body).length();
        }
        long took = System.nanoTime() - t0;
        if (sink == 42) {
            System.out.print(""); // keeps the loop's result alive
        }
        return (double) took / measured;
    }

    private static String suffix(String protocol) {
        return protocol.equals("h2c") ? "-h2c" : "";
    }

    /** JIT and connections: the first calls of a fresh JVM load and compile the HTTP client's code. */
    private void warmUp(String topic, int n) throws Exception {
        app.recorder.reset(0);
        long now = System.currentTimeMillis();
        List<NewJob> warm = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            warm.add(new NewJob(topic, "w" + i, false, now, 0, BenchApp.PAYLOAD));
            if (warm.size() == 1000) {
                app.jobs.scheduleAll(warm);
                warm.clear();
            }
        }
        if (!warm.isEmpty()) {
            app.jobs.scheduleAll(warm);
        }
        long deadline = System.currentTimeMillis() + 120_000;
        while (jobsInRedis(topic) > 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
    }

    private long jobsInRedis(String topic) {
        return app.store.topics().stream().filter(t -> t.topic().equals(topic))
                .mapToLong(t -> t.scheduled() + t.inflight() + t.dead()).sum();
    }

    /**
     * The receiver's ceiling: a closed-loop load client with {@link #IN_FLIGHT} calls in flight
     * for 1 s of warm-up and {@code seconds} measured. Emits its line and returns calls per second.
     */
    private double ceiling(String protocol, int seconds) throws Exception {
        boolean h2 = protocol.equals("h2c");
        // One event loop: all connections and answers on it, no hop between threads per call.
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1));
        try {
            // HTTP/1.1 pipelined (4 per connection) so that the load, not the round trip, sets the pace.
            HttpClient client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true)
                    .setPipelining(!h2).setPipeliningLimit(4)
                    .setProtocolVersion(h2 ? HttpVersion.HTTP_2 : HttpVersion.HTTP_1_1).setHttp2ClearTextUpgrade(false),
                    new PoolOptions().setHttp1MaxSize(64).setHttp2MaxSize(2));
            RequestOptions options = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1")
                    .setPort(receiver.port()).setURI("/deliver").putHeader("Content-Type", "application/json")
                    .putHeader("X-Delayq-Job-Id", "load").putHeader("X-Delayq-Topic", "load")
                    .putHeader("X-Delayq-Attempt", "1");
            Buffer body = Buffer.buffer(BenchApp.PAYLOAD);
            AtomicLong ok = new AtomicLong();
            AtomicLong errors = new AtomicLong();
            long warmEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            long end = warmEnd + TimeUnit.SECONDS.toNanos(seconds);
            CountDownLatch finished = new CountDownLatch(IN_FLIGHT);
            vertx.runOnContext(v -> {
                for (int i = 0; i < IN_FLIGHT; i++) {
                    loop(client, options, body, end, ok, errors, finished);
                }
            });
            while (System.nanoTime() < warmEnd) {
                Thread.sleep(5);
            }
            long ok0 = ok.get();
            double cpu0 = receiver.cpu();
            long t0 = System.nanoTime();
            finished.await(seconds + 30L, TimeUnit.SECONDS);
            double took = (System.nanoTime() - t0) / 1e9;
            long calls = ok.get() - ok0;
            double rps = calls / took;
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("schema", "delayq-bench/v1");
            r.put("scenario", "http-ceiling" + suffix(protocol));
            r.put("params", Map.of("protocol", protocol, "in_flight", IN_FLIGHT, "seconds", seconds,
                    "client", "Vert.x HttpClient in the benchmark JVM"));
            r.put("ok", errors.get() == 0 && calls > 0);
            r.put("throughput_jps", Math.round(rps));
            r.put("errors", errors.get());
            r.put("receiver_cpu_ms_per_1k", BenchApp.round((receiver.cpu() - cpu0) * 1e6 / Math.max(1, calls), 1));
            app.emit(r);
            return rps;
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    private static void loop(HttpClient client, RequestOptions options, Buffer body, long end, AtomicLong ok,
            AtomicLong errors, CountDownLatch finished) {
        client.request(options).compose(req -> req.send(body)).compose(resp -> resp.end().map(resp.statusCode()))
                .onComplete(ar -> {
                    if (ar.succeeded() && ar.result() / 100 == 2) {
                        ok.incrementAndGet();
                    } else {
                        errors.incrementAndGet();
                    }
                    if (System.nanoTime() < end) {
                        loop(client, options, body, end, ok, errors, finished);
                    } else {
                        finished.countDown();
                    }
                });
    }
}
