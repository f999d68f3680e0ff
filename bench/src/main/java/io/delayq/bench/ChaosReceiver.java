package io.delayq.bench;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServerOptions;

/**
 * The chaos scenario's HTTP target, a process of its own on the host (never faulted): this jar
 * started with {@code --chaos-receiver <records-file> <port> <seed> <address>...}, a bare Vert.x
 * server listening on each namespace's host end. Each call "works" 0–2 s (a delay drawn from the
 * seed, the job id and the attempt, so that a run can be repeated), then answers 204. Per call
 * it appends {@code <job id> <attempt> <caller address> <start ms> <end ms> <answered 1|0>},
 * written when the work ends whether or not the answer still reached the caller: the call was
 * delivered and done either way. The caller's address names the replica (each sits alone in its
 * namespace), so nothing in delayq has to report who ran what.
 */
final class ChaosReceiver {
    private final Process process;
    private final Path records;

    private ChaosReceiver(Process process, Path records) {
        this.process = process;
        this.records = records;
    }

    static ChaosReceiver start(Path dir, int port, long seed, List<String> addresses) throws IOException {
        Path records = dir.resolve("deliveries.txt");
        Files.deleteIfExists(records);
        Files.createFile(records);
        List<String> cmd = new ArrayList<>(List.of(ChaosReplica.java(), "-Xmx128m", "-XX:TieredStopAtLevel=1", "-jar",
                ChaosReplica.jar(), "--chaos-receiver", records.toString(), Integer.toString(port), Long.toString(seed)));
        cmd.addAll(addresses);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("receiver.log").toFile())
                .start();
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly, "chaos-receiver-kill"));
        ChaosReceiver r = new ChaosReceiver(p, records);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.readString(dir.resolve("receiver.log")).contains("receiver ready")) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
                p.destroyForcibly();
                throw new IllegalStateException("the chaos receiver did not start: " + Files.readString(dir.resolve("receiver.log")));
            }
            sleep(50);
        }
        return r;
    }

    /** Every call recorded so far (complete lines). */
    List<String[]> records() throws IOException {
        List<String[]> out = new ArrayList<>();
        for (String line : Files.readAllLines(records, StandardCharsets.US_ASCII)) {
            String[] f = line.split(" ");
            if (f.length == 6) {
                out.add(f);
            }
        }
        return out;
    }

    double cpu() {
        return Stats.cpuSeconds(process.pid());
    }

    void stop() {
        process.destroy();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** How long one call works: 0–2 s, the same for the same seed, job and attempt. */
    static long workMs(long seed, String id, String attempt) {
        return new SplittableRandom(seed * 31 + (id + "/" + attempt).hashCode()).nextLong(2001);
    }

    /** The receiver process itself. */
    static void serve(String recordsFile, int port, long seed, List<String> addresses) throws Exception {
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2).setWorkerPoolSize(1));
        StringBuilder[] pending = { new StringBuilder(1 << 16) };
        Object lock = new Object();
        CountDownLatch listening = new CountDownLatch(addresses.size());
        for (String address : addresses) {
            vertx.createHttpServer(new HttpServerOptions().setHost(address).setPort(port).setTcpNoDelay(true))
                    .requestHandler(req -> {
                        long start = System.currentTimeMillis();
                        String id = req.getHeader("X-Delayq-Job-Id");
                        String attempt = req.getHeader("X-Delayq-Attempt");
                        String caller = req.remoteAddress().hostAddress();
                        req.end().onComplete(body -> vertx.setTimer(Math.max(1, workMs(seed, id, attempt)), t -> {
                            long end = System.currentTimeMillis();
                            req.response().setStatusCode(204).end().onComplete(sent -> {
                                synchronized (lock) {
                                    pending[0].append(id).append(' ').append(attempt).append(' ').append(caller).append(' ')
                                            .append(start).append(' ').append(end).append(' ')
                                            .append(sent.succeeded() ? 1 : 0).append('\n');
                                }
                            });
                        }));
                    }).listen().onSuccess(s -> listening.countDown()).onFailure(e -> {
                        e.printStackTrace();
                        System.exit(1);
                    });
        }
        if (!listening.await(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException("receiver did not listen on " + addresses);
        }
        System.out.println("receiver ready " + port + " on " + addresses);
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
                Thread.sleep(20);
            }
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
