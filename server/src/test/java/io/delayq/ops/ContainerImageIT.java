package io.delayq.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.dev.RedisProcess;
import io.delayq.support.AppProcess;
import io.delayq.support.Topics;

/**
 * {@code src/main/docker/Dockerfile.jvm} and the packaged server cannot drift apart: the image is on
 * a JDK 25 runtime (the AOT cache needs the JDK it was trained with, and the {@code -Paot} build
 * trains with 25), it copies every part of the packaged layout and nothing that is not there, the
 * AOT cache included, and its ENTRYPOINT, word for word, starts the packaged server in the image's
 * working directory and serves the API. No container runtime exists on our build machines, so the
 * image itself is never built here; this is what can be checked without one. After {@code -Paot}
 * (in .ci/run) the same command must use the cache: the JVM logs no {@code [aot]} error.
 */
class ContainerImageIT {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path DOCKERFILE = ROOT.resolve("src/main/docker/Dockerfile.jvm");
    private static final Path APP = Path.of("target", "quarkus-app").toAbsolutePath();
    private static final String FROM_APP = "server/target/quarkus-app/";
    /**
     * Build outputs that are no part of what runs: the dependency list, and after -Paot the training
     * run's log and the AppCDS archive Quarkus also writes (-XX:AOTCache reads app.aot alone).
     */
    private static final Set<String> NOT_SHIPPED = Set.of("quarkus-app-dependencies.txt", "aot-training.log",
            "app-cds.jsa");
    /** Written only by the -Paot build's training run. */
    private static final String CACHE = "app.aot";

    @Test
    void theImageIsOnJdk25AndCopiesExactlyThePackagedLayoutWithTheCache() throws IOException {
        List<String> lines = instructions();
        String from = lines.stream().filter(l -> l.startsWith("FROM ")).findFirst().orElseThrow();
        assertTrue(from.matches("FROM eclipse-temurin:25(\\.[0-9.+_]+)?-jre\\S*"),
                "a JDK 25 runtime, the JDK the -Paot build trains the cache with: " + from);

        Set<String> copied = new TreeSet<>();
        String workdir = value(lines, "WORKDIR");
        for (String l : lines) {
            Matcher m = Pattern.compile("COPY (--\\S+ )*(\\S+) (\\S+)").matcher(l);
            if (l.startsWith("COPY ")) {
                assertTrue(m.matches(), l);
                String src = m.group(2);
                assertTrue(src.startsWith(FROM_APP), "only the packaged server is copied: " + l);
                String entry = src.substring(FROM_APP.length()).replaceAll("/$", "");
                copied.add(entry);
                String dest = m.group(3);
                assertTrue(dest.equals(workdir + "/") || dest.equals(workdir + "/" + entry + "/"),
                        "into the working directory, as laid out in target/quarkus-app: " + l);
            }
        }
        Set<String> packaged = new TreeSet<>();
        try (Stream<Path> s = Files.list(APP)) {
            s.map(p -> p.getFileName().toString()).filter(n -> !NOT_SHIPPED.contains(n)).forEach(packaged::add);
        }
        packaged.add(CACHE); // present after -Paot, which the image's usage requires
        assertEquals(packaged, copied, "Dockerfile.jvm's COPY lines against " + APP + " (plus " + CACHE + ")");
    }

    @Test
    void theImagesEntrypointStartsThePackagedServerWithTheCache() throws Exception {
        List<String> lines = instructions();
        List<String> entrypoint = new ArrayList<>();
        new ObjectMapper().readTree(value(lines, "ENTRYPOINT")).forEach(n -> entrypoint.add(n.asText()));
        assertEquals("java", entrypoint.get(0), "the image's java on PATH");
        assertTrue(entrypoint.contains("-XX:AOTCache=" + CACHE), "started with the trained cache: " + entrypoint);
        assertEquals(List.of("-jar", "quarkus-run.jar"), entrypoint.subList(entrypoint.size() - 2, entrypoint.size()));

        // The image's java is this JDK's (25: the build's and the cache's).
        List<String> command = new ArrayList<>(entrypoint);
        command.set(0, ProcessHandle.current().info().command().orElseThrow());
        boolean cached = Files.exists(APP.resolve(CACHE));
        try (RedisProcess redis = RedisProcess.startEphemeral()) {
            int port = RedisProcess.freePort();
            // As Kubernetes configures the container: environment variables (k8s/configmap.yaml).
            try (AppProcess app = AppProcess.startCommand("image-entrypoint", command, APP,
                    Map.of("QUARKUS_REDIS_HOSTS", "redis://127.0.0.1:" + redis.port(), "QUARKUS_HTTP_PORT",
                            Integer.toString(port), "QUARKUS_SHUTDOWN_DELAY", "0s"),
                    port)) {
                String topic = Topics.fresh("image");
                assertEquals(201, app.post("/jobs", "{\"topic\":\"" + topic + "\",\"delayMs\":60000}").statusCode());
                assertEquals(200, app.status("/q/health/ready"));
                if (cached) {
                    // A cache the JVM cannot map (another JDK, jars with new times) is an [aot] error and a cold start.
                    assertFalse(app.logText().contains("[error][aot]"), "the AOT cache was refused:\n" + app.logText());
                }
            }
        }
    }

    /** The Dockerfile's instructions, comments and blank lines left out, continuations joined. */
    private static List<String> instructions() throws IOException {
        List<String> out = new ArrayList<>();
        for (String l : Files.readAllLines(DOCKERFILE)) {
            if (!l.isBlank() && !l.startsWith("#")) {
                out.add(l.strip());
            }
        }
        return out;
    }

    private static String value(List<String> lines, String instruction) {
        return lines.stream().filter(l -> l.startsWith(instruction + " ")).reduce((a, b) -> b)
                .map(l -> l.substring(instruction.length() + 1).strip())
                .orElseThrow(() -> new AssertionError("no " + instruction + " in " + DOCKERFILE));
    }
}
