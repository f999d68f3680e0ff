package io.delayq.cli;

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
 * The packaged server ({@code ../server/target/quarkus-app/quarkus-run.jar}, built before this
 * module) as a process of its own, as the server's AppProcess starts it: the minimum of it that
 * the CLI's tests need (start with settings, wait until ready, plain HTTP for set-up, kill).
 */
final class ServerProcess implements AutoCloseable {
    static final Path JAR = Path.of("..", "server", "target", "quarkus-app", "quarkus-run.jar");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    final int port;
    private final Process process;
    private final Path log;

    private ServerProcess(int port, Process process, Path log) {
        this.port = port;
        this.process = process;
        this.log = log;
    }

    static ServerProcess start(int redisPort, Map<String, String> settings) throws IOException {
        if (!Files.exists(JAR)) {
            throw new IllegalStateException("package the server first (./mvnw -pl server package): " + JAR.toAbsolutePath());
        }
        int port = RedisProcess.freePort();
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-Dquarkus.http.port=" + port, "-Dquarkus.shutdown.delay=1s",
                "-Dquarkus.redis.hosts=redis://127.0.0.1:" + redisPort));
        settings.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.add("-jar");
        cmd.add(JAR.toString());
        Path log = Files.createDirectories(Path.of("target", "it-logs")).resolve("server-" + port + ".log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly, "server-kill"));
        ServerProcess s = new ServerProcess(port, p, log);
        s.awaitReady(Duration.ofSeconds(60));
        return s;
    }

    private void awaitReady(Duration timeout) throws IOException {
        try {
            org.awaitility.Awaitility.await("the server ready").atMost(timeout).until(() -> {
                if (!process.isAlive()) {
                    throw new IllegalStateException("the server exited at start-up:\n" + Files.readString(log));
                }
                return status("/q/health/ready") == 200;
            });
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            throw new IllegalStateException("the server was not ready in " + timeout + ":\n" + Files.readString(log));
        }
    }

    String url() {
        return "http://127.0.0.1:" + port;
    }

    private int status(String path) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(url() + path)).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    /** A request for the tests' set-up (what the CLI has no option for, such as maxAttempts). */
    HttpResponse<String> send(String method, String path, String token, String json) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url() + path)).timeout(Duration.ofSeconds(30))
                .header("Authorization", "Bearer " + token)
                .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        if (json != null) {
            b.header("Content-Type", "application/json");
        }
        try {
            return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    String logText() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }
}
