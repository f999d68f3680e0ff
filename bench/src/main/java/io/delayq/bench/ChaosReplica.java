package io.delayq.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One replica of the chaos scenario: this jar as a {@code --replica} process inside its own
 * network namespace (so it can be cut off), JVM options as small as the ITs' (3 replicas on 2
 * cores), its log appended to {@code replica-<i>.log} across restarts. SIGKILL, SIGSTOP and
 * SIGCONT go to the JVM itself: {@code ip netns exec} execs the command, the pid is Java's.
 */
final class ChaosReplica {
    static final int PORT = 8080;
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    final int index;
    private final List<String> cmd;
    private final Path log;
    private final String base;
    private volatile Process process;

    ChaosReplica(int index, ChaosNet net, Path dir, Map<String, String> settings) {
        this.index = index;
        this.log = dir.resolve("replica-" + index + ".log");
        this.base = "http://" + net.replicaAddress(index) + ":" + PORT;
        List<String> java = new ArrayList<>(List.of(java(), "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-Xlog:gc:file=" + dir.resolve("replica-" + index + "-gc-%p.log").toAbsolutePath(),
                "-Dquarkus.http.port=" + PORT,
                "-Dquarkus.log.console.format=%d{HH:mm:ss.SSS} %-5p [%c{2.}] %s%e%n",
                "-Dquarkus.log.category.\"io.delayq\".level=INFO"));
        settings.forEach((k, v) -> java.add("-D" + k + "=" + v));
        java.addAll(List.of("-jar", jar(), "--replica", settings.get("quarkus.redis.hosts"),
                dir.resolve("replica-" + index + "-records.txt").toString()));
        this.cmd = net.inNamespace(index, java);
    }

    /** Starts the process (again, after a kill); returns without waiting for it to be ready. */
    synchronized void start() throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        process = p;
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly, "chaos-replica-" + index + "-kill"));
    }

    /** Waits until the replica answers ready (its takers run); false on timeout or when it died. */
    boolean awaitReady(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                return false;
            }
            if (status("/q/health/ready") == 200) {
                return true;
            }
            sleep(200);
        }
        return false;
    }

    void kill() {
        Process p = process;
        p.destroyForcibly();
        try {
            p.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    void freeze() {
        signal("STOP");
    }

    void thaw() {
        signal("CONT");
    }

    private void signal(String sig) {
        try {
            new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).start().waitFor(5, TimeUnit.SECONDS);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Thaws (a frozen JVM does not die of SIGTERM) and ends the process. */
    void stop() {
        Process p = process;
        if (p != null && p.isAlive()) {
            thaw();
            p.destroyForcibly();
        }
    }

    String base() {
        return base;
    }

    double cpu() {
        return Stats.cpuSeconds(process.pid());
    }

    int status(String path) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    static String java() {
        return ProcessHandle.current().info().command().orElse("java");
    }

    static String jar() {
        return Path.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator)[0]).toAbsolutePath().toString();
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
