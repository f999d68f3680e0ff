package io.delayq.outbox.deployment;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import io.delayq.dev.RedisProcess;
import io.quarkus.test.QuarkusUnitTest;

/**
 * A PostgreSQL server of the tests' own: Debian's binaries ({@code apt-get install postgresql};
 * .ci/run installs them), a fresh cluster in a temporary directory, on a free port, stopped and
 * removed when the JVM exits. PostgreSQL refuses to run as root, so as root (CI) the server runs
 * as the package's {@code postgres} user. Found again through system properties, as a test class
 * is loaded twice (by JUnit and by the test application's class loader); {@link #stop} and
 * {@link #start} restart it on the same port and data.
 */
final class OwnPostgres {
    private static final String PREFIX = "dqtest.pg.";

    private OwnPostgres() {
    }

    /** The JDBC URL of the server (database {@code postgres}, user {@code app}, no password), started on first use. */
    static synchronized String jdbcUrl() {
        if (System.getProperty(PREFIX + "port") == null) {
            try {
                Path dir = Files.createTempDirectory("delayq-pg-");
                Path data = dir.resolve("data");
                run(List.of("chown", "postgres:postgres", dir.toString()), true);
                run(asPostgres(bin("initdb"), "-D", data.toString(), "-A", "trust", "-U", "app", "--no-sync"), false);
                System.setProperty(PREFIX + "dir", dir.toString());
                System.setProperty(PREFIX + "port", Integer.toString(RedisProcess.freePort()));
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    stop();
                    run(List.of("rm", "-rf", dir.toString()), true);
                }));
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
            start();
        }
        return "jdbc:postgresql://127.0.0.1:" + System.getProperty(PREFIX + "port") + "/postgres";
    }

    /**
     * {@code app} with the server as its default datasource (started on first use), the Dev
     * Service off, and a random HTTP port.
     */
    static QuarkusUnitTest datasource(QuarkusUnitTest app) {
        return app.overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
                .overrideConfigKey("quarkus.datasource.jdbc.url", jdbcUrl())
                .overrideConfigKey("quarkus.datasource.username", "app")
                .overrideConfigKey("quarkus.datasource.devservices.enabled", "false")
                .overrideConfigKey("quarkus.http.test-port", "0");
    }

    /** Starts the server (again) and waits until it accepts connections. */
    static synchronized void start() {
        Path dir = Path.of(System.getProperty(PREFIX + "dir"));
        int port = Integer.parseInt(System.getProperty(PREFIX + "port"));
        try {
            new ProcessBuilder(asPostgres(bin("postgres"), "-D", dir.resolve("data").toString(), "-p", Integer.toString(port),
                    "-k", dir.toString(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"))
                    .redirectErrorStream(true).redirectOutput(dir.resolve("server.log").toFile()).start();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!run(List.of(bin("pg_isready"), "-q", "-h", "127.0.0.1", "-p", Integer.toString(port)), true)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("PostgreSQL did not start on port " + port + ": see " + dir.resolve("server.log"));
            }
            pause();
        }
    }

    /** Stops the server at once (SIGINT: PostgreSQL's fast shutdown, every session cut) and waits until it is gone. */
    static synchronized void stop() {
        String dir = System.getProperty(PREFIX + "dir");
        if (dir == null) {
            return;
        }
        Path pidFile = Path.of(dir, "data", "postmaster.pid");
        try {
            if (!Files.exists(pidFile)) {
                return;
            }
            long pid = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
            ProcessHandle.of(pid).ifPresent(p -> {
                run(List.of("kill", "-INT", Long.toString(pid)), true);
                p.onExit().join();
            });
        } catch (IOException | RuntimeException e) {
            // already gone
        }
        int port = Integer.parseInt(System.getProperty(PREFIX + "port"));
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (listening(port) && System.nanoTime() < deadline) {
            pause();
        }
    }

    /** Between two looks at the server: a poll with a deadline, not a wait for a guessed time. */
    private static void pause() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static boolean listening(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static List<String> asPostgres(String... command) {
        List<String> cmd = new ArrayList<>();
        if ("root".equals(System.getProperty("user.name"))) {
            cmd.addAll(List.of("runuser", "-u", "postgres", "--"));
        }
        cmd.addAll(List.of(command));
        return cmd;
    }

    /** A binary of the newest PostgreSQL under /usr/lib/postgresql. */
    private static String bin(String name) {
        try (Stream<Path> versions = Files.list(Path.of("/usr/lib/postgresql"))) {
            return versions.max(Comparator.comparingInt(v -> Integer.parseInt(v.getFileName().toString())))
                    .map(v -> v.resolve("bin").resolve(name).toString())
                    .orElseThrow(() -> new IllegalStateException("no PostgreSQL under /usr/lib/postgresql"));
        } catch (IOException e) {
            throw new IllegalStateException("PostgreSQL's server is needed: apt-get install -y postgresql", e);
        }
    }

    private static boolean run(List<String> command, boolean quiet) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            int rc = p.waitFor();
            if (rc != 0 && !quiet) {
                throw new IllegalStateException(String.join(" ", command) + " failed (" + rc + "): " + out);
            }
            return rc == 0;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
