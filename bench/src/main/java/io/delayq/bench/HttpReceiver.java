package io.delayq.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import io.delayq.dev.RedisProcess;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServerOptions;

/**
 * The HTTP target of the HTTP scenarios, in a process of its own so that its CPU is not counted
 * as delayq's: this benchmark jar started with {@code --receiver <records-file>}, a bare Vert.x
 * HTTP server (no Quarkus) on two event loops that answers every POST with 204 once its body
 * arrived, and speaks HTTP/1.1 and h2c (prior knowledge) on the same port. It appends
 * {@code <X-Delayq-Job-Id> <epoch ms>} per call to the records file, which the benchmark reads
 * ({@link #drainInto}).
 */
final class HttpReceiver {
    private final Process process;
    private final Path records;
    private final int port;
    private long offset;

    private HttpReceiver(Process process, Path records, int port) {
        this.process = process;
        this.records = records;
        this.port = port;
    }

    /** Starts the receiver process and waits until it listens. */
    static HttpReceiver start() throws IOException {
        Path records = Files.createTempFile("delayq-bench-receiver-", ".txt");
        String javaCmd = ProcessHandle.current().info().command().orElse("java");
        String jar = Path.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator)[0]).toAbsolutePath()
                .toString();
        int port = RedisProcess.freePort();
        Process p = new ProcessBuilder(List.of(javaCmd, "-Xmx512m", "-jar", jar, "--receiver", records.toString(),
                Integer.toString(port))).redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null && !line.contains("receiver ready")) {
            // start-up output
        }
        if (line == null) {
            throw new IllegalStateException("the HTTP receiver did not start");
        }
        Thread.ofPlatform().daemon().start(() -> {
            try {
                while (out.readLine() != null) {
                    // keep the pipe drained
                }
            } catch (IOException ignored) {
                // process ended
            }
        });
        HttpReceiver r = new HttpReceiver(p, records, port);
        Runtime.getRuntime().addShutdownHook(new Thread(r::stop));
        return r;
    }

    String url() {
        return "http://127.0.0.1:" + port + "/deliver";
    }

    int port() {
        return port;
    }

    /** Moves the calls recorded since the last call into the recorder (ids that are not an index are skipped). */
    synchronized void drainInto(Recorder recorder) {
        offset = recorder.readRecords(records, offset);
    }

    /** CPU seconds the receiver process used so far. */
    double cpu() {
        return Stats.cpuSeconds(process.pid());
    }

    void stop() {
        process.destroy();
        try {
            process.waitFor();
            Files.deleteIfExists(records);
        } catch (InterruptedException | IOException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The receiver process itself ({@code --receiver <records-file> <port>}). */
    static void serve(String recordsFile, int port) throws Exception {
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2).setWorkerPoolSize(1));
        StringBuilder[] pending = { new StringBuilder(1 << 16) };
        Object lock = new Object();
        HttpServerOptions options = new HttpServerOptions().setHost("127.0.0.1").setPort(port)
                .setHttp2ClearTextEnabled(true).setTcpNoDelay(true);
        CountDownLatch listening = new CountDownLatch(2);
        for (int i = 0; i < 2; i++) { // two servers on one port: Vert.x spreads connections over both loops
            vertx.createHttpServer(options).requestHandler(req -> {
                String id = req.getHeader("X-Delayq-Job-Id");
                long now = System.currentTimeMillis();
                synchronized (lock) {
                    pending[0].append(id).append(' ').append(now).append('\n');
                }
                req.end().onComplete(v -> req.response().setStatusCode(204).end());
            }).listen().onSuccess(s -> listening.countDown()).onFailure(e -> {
                e.printStackTrace();
                System.exit(1);
            });
        }
        listening.await();
        System.out.println("receiver ready " + port);
        try (Writer out = Files.newBufferedWriter(Path.of(recordsFile), StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
            while (true) {
                StringBuilder b;
                synchronized (lock) {
                    b = pending[0];
                    pending[0] = new StringBuilder(Math.max(1 << 16, b.length()));
                }
                if (b.length() > 0) {
                    out.append(b);
                    out.flush();
                }
                Thread.sleep(10);
            }
        }
    }
}
