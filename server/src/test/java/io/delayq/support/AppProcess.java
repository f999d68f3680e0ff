package io.delayq.support;

import io.delayq.dev.RedisCluster;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.delayq.dev.RedisProcess;

/**
 * The packaged application ({@code target/quarkus-app/quarkus-run.jar}) started as a separate
 * JVM process: a replica that can be SIGKILLed or SIGTERMed for real.
 */
public final class AppProcess implements AutoCloseable {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final String name;
    private final String host;
    private final int port;
    private final Process process;
    private final Path log;

    private AppProcess(String name, String host, int port, Process process, Path log) {
        this.name = name;
        this.host = host;
        this.port = port;
        this.process = process;
        this.log = log;
    }

    /** Starts a replica against the given Redis with extra {@code -D} settings; waits until it is ready. */
    public static AppProcess start(String name, int redisPort, Map<String, String> settings) {
        return start(name, Map.of("quarkus.redis.hosts", "redis://127.0.0.1:" + redisPort), settings);
    }

    /**
     * Starts a replica against a Redis Cluster ({@code quarkus.redis.client-type=cluster}, every
     * node as a seed) with extra {@code -D} settings; waits until it is ready.
     */
    public static AppProcess start(String name, RedisCluster cluster, Map<String, String> settings) {
        return start(name, Map.of("quarkus.redis.hosts", cluster.hostsUri(), "quarkus.redis.client-type", "cluster"),
                settings);
    }

    /**
     * Starts a replica with the given Redis settings ({@code quarkus.redis.hosts} and the like: a
     * Redis reached at another address than loopback) and extra {@code -D} settings; waits until
     * it is ready.
     */
    public static AppProcess startWith(String name, Map<String, String> redis, Map<String, String> settings) {
        return start(name, redis, settings);
    }

    /**
     * Starts a replica inside a network namespace, so that {@link NetNs#cut()} cuts it off: it
     * reaches Redis and HTTP targets at the namespace's host end ({@link NetNs#hostAddress()}; a
     * Redis there must be bound to that address too), and the test reaches it at
     * {@link NetNs#nsAddress()}. Waits until it is ready.
     */
    public static AppProcess startIn(NetNs ns, String name, Map<String, String> redis, Map<String, String> settings) {
        return start(name, ns, redis, settings);
    }

    /**
     * Starts a replica of another build of the server (its {@code quarkus-run.jar}: an earlier
     * release, see {@link PreviousRelease}) against the given Redis; waits until it is ready.
     */
    public static AppProcess startJar(String name, Path jar, int redisPort, Map<String, String> settings) {
        return start(name, null, jar, Map.of("quarkus.redis.hosts", "redis://127.0.0.1:" + redisPort), settings);
    }

    private static AppProcess start(String name, Map<String, String> redis, Map<String, String> settings) {
        return start(name, null, redis, settings);
    }

    private static AppProcess start(String name, NetNs ns, Map<String, String> redis, Map<String, String> settings) {
        return start(name, ns, Path.of("target", "quarkus-app", "quarkus-run.jar"), redis, settings);
    }

    private static AppProcess start(String name, NetNs ns, Path jar, Map<String, String> redis, Map<String, String> settings) {
        int port = RedisProcess.freePort();
        if (!Files.exists(jar)) {
            throw new IllegalStateException("package the application first: " + jar.toAbsolutePath());
        }
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-Dquarkus.http.port=" + port, "-Dquarkus.shutdown.delay=1s",
                "-Dquarkus.log.console.format=%d{HH:mm:ss.SSS} %-5p [%c{2.}] %s%e%n"));
        redis.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        settings.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.add("-jar");
        cmd.add(jar.toString());
        List<String> command = ns == null ? cmd : ns.command(cmd);
        return start(name, ns == null ? "127.0.0.1" : ns.nsAddress(), port, new ProcessBuilder(command));
    }

    /**
     * Starts the packaged application by a command line of one's own (as a container image runs
     * it: its working directory, its environment), listening on {@code port}; waits until it is ready.
     */
    public static AppProcess startCommand(String name, List<String> command, Path workDir, Map<String, String> env,
            int port) {
        ProcessBuilder pb = new ProcessBuilder(command).directory(workDir.toFile());
        pb.environment().putAll(env);
        return start(name, "127.0.0.1", port, pb);
    }

    private static AppProcess start(String name, String host, int port, ProcessBuilder pb) {
        try {
            Path logs = Files.createDirectories(Path.of("target", "it-logs"));
            Path log = logs.resolve(name + "-" + port + ".log").toAbsolutePath();
            Process p = pb.redirectErrorStream(true).redirectOutput(log.toFile()).start();
            // A replica outlives the test JVM unless killed: never leave one behind.
            Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly, name + "-kill"));
            AppProcess app = new AppProcess(name, host, port, p, log);
            app.awaitReady(Duration.ofSeconds(60)); // three JVMs starting at once on a busy 2-core machine
            return app;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private void awaitReady(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited at start-up:\n" + logText());
            }
            if (status("/q/health/ready") == 200) {
                return;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException(name + " not ready in " + timeout + ":\n" + logText());
    }

    public String baseUrl() {
        return "http://" + host + ":" + port;
    }

    /** HTTP status of a GET, or -1 when the process does not answer. */
    public int status(String path) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl() + path)).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    /** GET with its status, for assertions on both. */
    public HttpResponse<String> getResponse(String path) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl() + path)).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    public String get(String path) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl() + path)).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    /** POSTs JSON and returns the response. */
    public HttpResponse<String> post(String path, String json) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl() + path)).timeout(Duration.ofSeconds(30))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Any method, with a JSON body (or none when {@code json} is null), and the response. */
    public HttpResponse<String> send(String method, String path, String json) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl() + path)).timeout(Duration.ofSeconds(30))
                    .header("Content-Type", "application/json")
                    .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json))
                    .build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    /** POSTs JSON without waiting: the reply, or the failure to get one (within {@code timeout}). */
    public java.util.concurrent.CompletableFuture<HttpResponse<String>> postAsync(String path, String json, Duration timeout) {
        return HTTP.sendAsync(HttpRequest.newBuilder(URI.create(baseUrl() + path)).timeout(timeout)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** SIGKILL: the replica dies mid-whatever, as on a node failure. */
    public void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The JVM's pid (inside a namespace too: {@code ip netns exec} execs the command). */
    public long pid() {
        return process.pid();
    }

    /** SIGSTOP: the whole JVM stands still, as in a long GC pause or a VM stall; its sockets stay open. */
    public void freeze() {
        Signals.stop(process.pid());
    }

    /** SIGCONT: the JVM carries on where {@link #freeze()} stopped it. */
    public void thaw() {
        Signals.cont(process.pid());
    }

    /** SIGTERM, as Kubernetes stops a pod. */
    public void terminate() {
        process.destroy();
    }

    public boolean waitForExit(Duration timeout) throws InterruptedException {
        return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public String logText() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            kill();
        }
    }

    @Override
    public String toString() {
        return name + " (" + baseUrl() + ", log " + log + ")";
    }

    static File jar() {
        return Path.of("target", "quarkus-app", "quarkus-run.jar").toFile();
    }
}
