package io.delayq.newuser;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

import io.delayq.dev.RedisProcess;

/**
 * The first-time user: a project outside this repo whose only dependency is the installed extension,
 * one observer, no configuration. It must build offline with nothing but what {@code ./mvnw install}
 * put in the local repository, start against a plain redis-server and run a job POSTed to it.
 */
class NewUserIT {
    private static final Duration BUILD_TIMEOUT = Duration.ofMinutes(5);
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration DELIVERY_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(20);
    private static final Pattern FEATURES = Pattern.compile("Installed features: \\[([^\\]]*)\\]");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private final String version = property("delayq.version");
    private final Path localRepository = Path.of(property("delayq.it.localRepository"));

    /** Kept when the test fails, so the project, build log and application log can be read. */
    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
    Path appDir;

    @Test
    void appDependingOnlyOnTheExtensionBuildsStartsAndRunsAnObservedJob() throws Exception {
        System.out.println("[new-user] application in " + appDir);
        assertExtensionInstalled("runtime", "quarkus-delayq");
        assertExtensionInstalled("deployment", "quarkus-delayq-deployment");
        copyTemplate();

        long t0 = System.nanoTime();
        build();
        System.out.printf("[new-user] built in %d ms%n", millisSince(t0));
        assertNoDevRedisShipped();

        RedisProcess redis = RedisProcess.startEphemeral();
        try {
            int port = RedisProcess.freePort();
            Path log = appDir.resolve("app.log");
            long t1 = System.nanoTime();
            Process app = new ProcessBuilder(javaExecutable(), "-Dquarkus.redis.hosts=" + redis.uri(),
                    "-Dquarkus.http.port=" + port, "-jar", "target/quarkus-app/quarkus-run.jar")
                    .directory(appDir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            try {
                String base = "http://127.0.0.1:" + port;
                await("ready", START_TIMEOUT, () -> status(base + "/q/health/ready") == 200, app, log);
                await("the start-up line", START_TIMEOUT, () -> FEATURES.matcher(read(log)).find(), app, log);
                System.out.printf("[new-user] ready in %d ms%n", millisSince(t1));
                Matcher features = FEATURES.matcher(read(log));
                assertTrue(features.find());
                assertTrue(List.of(features.group(1).split(",\\s*")).contains("delayq"),
                        "delayq is not among the installed features: " + features.group());

                long t2 = System.nanoTime();
                HttpResponse<String> created = post(base + "/jobs",
                        "{\"topic\":\"greeting\",\"id\":\"hello-1\",\"payload\":{\"name\":\"new user\"}}");
                assertEquals(201, created.statusCode(), () -> "POST /jobs answered " + created.statusCode() + ": "
                        + created.body() + "\n--- app log ---\n" + read(log));
                await("the observer's line", DELIVERY_TIMEOUT, () -> read(log).contains("RECEIVED greeting hello-1 "), app,
                        log);
                System.out.printf("[new-user] job observed %d ms after the POST%n", millisSince(t2));
                assertTrue(read(log).contains("RECEIVED greeting hello-1 {\"name\":\"new user\"}"),
                        "the observer saw another payload:\n" + read(log));
            } finally {
                stop(app);
            }
        } finally {
            redis.stop();
        }
    }

    /**
     * The application resolves the extension from the local repository, not from the reactor: a
     * {@code ./mvnw verify} (no install) would test whatever an older install left there.
     */
    private void assertExtensionInstalled(String module, String artifactId) throws IOException {
        String file = artifactId + "-" + version + ".jar";
        Path installed = localRepository.resolve(Path.of("io", "delayq", artifactId, version, file));
        assertTrue(Files.isRegularFile(installed), installed + " is missing: run ./mvnw install, not verify");
        Path built = Path.of(property("delayq.it.repoRoot"), module, "target", file);
        if (Files.isRegularFile(built)) {
            assertEquals(-1L, Files.mismatch(built, installed),
                    installed + " is not the jar last built in " + module + ": run ./mvnw install, not verify");
        }
    }

    private void copyTemplate() throws IOException {
        Path template = Path.of(property("delayq.it.template"));
        try (Stream<Path> files = Files.walk(template)) {
            for (Path source : (Iterable<Path>) files::iterator) {
                Path target = appDir.resolve(template.relativize(source).toString());
                if (Files.isDirectory(source)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(source, target);
                }
            }
        }
        Path pom = appDir.resolve("pom.xml");
        Files.writeString(pom, Files.readString(pom).replace("@delayq.version@", version));
    }

    /** The repo's wrapper, offline, with the same local repository and JDK as this build. */
    private void build() throws IOException, InterruptedException {
        Path log = appDir.resolve("build.log");
        ProcessBuilder pb = new ProcessBuilder(property("delayq.it.mvnw"), "-o", "-B", "-q",
                "-Dmaven.repo.local=" + localRepository, "package", "-DskipTests")
                .directory(appDir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        Process mvn = pb.start();
        try {
            if (!mvn.waitFor(BUILD_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                fail("the build did not finish in " + BUILD_TIMEOUT + ":\n" + read(log));
            }
            assertEquals(0, mvn.exitValue(), () -> "the build failed:\n" + read(log));
        } finally {
            stop(mvn);
        }
    }

    /** The Dev Service's redis-server (embedded-redis and its wrapper) is build-time only. */
    private void assertNoDevRedisShipped() throws IOException {
        Path lib = appDir.resolve("target/quarkus-app/lib/main");
        List<String> jars;
        try (Stream<Path> files = Files.list(lib)) {
            jars = files.map(p -> p.getFileName().toString()).sorted().toList();
        }
        assertTrue(jars.stream().anyMatch(j -> j.startsWith("io.delayq.quarkus-delayq-")), "no extension in " + jars);
        assertFalse(jars.stream().anyMatch(j -> j.contains("embedded-redis")), "embedded-redis ships in " + lib);
        assertFalse(jars.stream().anyMatch(j -> j.contains("delayq-dev-redis")), "delayq-dev-redis ships in " + lib);
    }

    private static void await(String what, Duration timeout, BooleanSupplier done, Process app, Path log)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.getAsBoolean()) {
            if (!app.isAlive()) {
                fail("the application exited (" + app.exitValue() + ") waiting for " + what + ":\n" + read(log));
            }
            if (System.nanoTime() > deadline) {
                fail("no " + what + " in " + timeout + ":\n" + read(log));
            }
            Thread.sleep(100);
        }
    }

    /** SIGTERM first (the application drains), then SIGKILL; never leaves the process or its children behind. */
    private static void stop(Process process) throws InterruptedException {
        process.descendants().forEach(ProcessHandle::destroy);
        process.destroy();
        if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            System.out.println("[new-user] pid " + process.pid() + " ignored SIGTERM for " + STOP_TIMEOUT + "; killing it");
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly().waitFor();
        }
    }

    private static int status(String url) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static HttpResponse<String> post(String url, String json) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static String read(Path file) {
        try {
            // Bytes, not readString: the process may be halfway through writing a character.
            return Files.exists(file) ? new String(Files.readAllBytes(file), StandardCharsets.UTF_8) : "(no " + file + ")";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String javaExecutable() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static long millisSince(long nanos) {
        return (System.nanoTime() - nanos) / 1_000_000;
    }

    private static String property(String name) {
        String value = System.getProperty(name);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException("system property " + name + " is not set: run this test through failsafe");
        }
        return value;
    }
}
