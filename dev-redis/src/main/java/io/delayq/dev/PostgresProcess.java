package io.delayq.dev;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A real PostgreSQL server as a child process on a loopback port, for the benchmark and the
 * multi-process tests and the outbox's Dev Service: Debian's binaries ({@code apt-get install
 * postgresql}; {@code initdb} on PATH, else the newest version under /usr/lib/postgresql), a fresh
 * cluster in a temporary directory (user {@code app} unless told otherwise, trust, database
 * {@code postgres}), no fsync. PostgreSQL refuses to run as root, so as root the server
 * runs as the package's {@code postgres} user. {@link #stop} and {@link #start} restart it on the
 * same port and data; {@link #close} stops it and removes the directory.
 */
public final class PostgresProcess implements AutoCloseable {
    private final Path dir;
    private final int port;

    private PostgresProcess(Path dir, int port) {
        this.dir = dir;
        this.port = port;
    }

    /** A new cluster on a free port, started, its superuser {@code app}. */
    public static PostgresProcess startEphemeral() {
        return startEphemeral("app");
    }

    /** A new cluster on a free port, started, with that superuser (trust: any password is accepted). */
    public static PostgresProcess startEphemeral(String user) {
        try {
            Path dir = Files.createTempDirectory("delayq-pg-");
            run(List.of("chown", "postgres:postgres", dir.toString()), true);
            run(asPostgres(bin("initdb"), "-D", dir.resolve("data").toString(), "-A", "trust", "-U", user, "--no-sync"),
                    false);
            PostgresProcess p = new PostgresProcess(dir, RedisProcess.freePort());
            p.start();
            return p;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The server of a cluster made earlier by {@link #startEphemeral} (its {@link #dir} and
     * {@link #port}), e.g. from a test class loaded by a second class loader.
     */
    public static PostgresProcess of(Path dir, int port) {
        return new PostgresProcess(dir, port);
    }

    /** The directory of the cluster (data/ and the server's log). */
    public Path dir() {
        return dir;
    }

    /** The JDBC URL of database {@code postgres} (user {@code app}, no password). */
    public String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }

    public int port() {
        return port;
    }

    /** The postmaster's pid (its backends are its children), or -1 when it is not running. */
    public long pid() {
        try {
            return Long.parseLong(Files.readAllLines(dir.resolve("data").resolve("postmaster.pid")).get(0).trim());
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Starts the server (again) and waits until it accepts connections. */
    public synchronized void start() {
        try {
            new ProcessBuilder(asPostgres(bin("postgres"), "-D", dir.resolve("data").toString(), "-p", Integer.toString(port),
                    "-k", dir.toString(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"))
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
    public synchronized void stop() {
        long pid = pid();
        if (pid > 0) {
            ProcessHandle.of(pid).ifPresent(p -> {
                run(List.of("kill", "-INT", Long.toString(pid)), true);
                p.onExit().join();
            });
        }
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (listening() && System.nanoTime() < deadline) {
            pause();
        }
    }

    @Override
    public void close() {
        stop();
        run(List.of("rm", "-rf", dir.toString()), true);
    }

    private boolean listening() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 200);
            return true;
        } catch (IOException e) {
            return false;
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

    private static List<String> asPostgres(String... command) {
        List<String> cmd = new ArrayList<>();
        if ("root".equals(System.getProperty("user.name"))) {
            cmd.addAll(List.of("runuser", "-u", "postgres", "--"));
        }
        cmd.addAll(List.of(command));
        return cmd;
    }

    /**
     * The directory of the server's binaries: the one of {@code initdb} on PATH (Debian puts only
     * the clients there; a user may link or add the server's), else the newest
     * /usr/lib/postgresql/N/bin that holds {@code initdb} and {@code postgres}; empty when neither.
     */
    public static Optional<Path> binDir() {
        String initdb = RedisProcess.onPath("initdb");
        if (initdb != null) {
            Path dir = Path.of(initdb).toAbsolutePath();
            try {
                dir = dir.toRealPath(); // /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb
            } catch (IOException e) {
                // keep the path as found
            }
            if (Files.isExecutable(dir.resolveSibling("postgres"))) {
                return Optional.of(dir.getParent());
            }
        }
        try (Stream<Path> versions = Files.list(Path.of("/usr/lib/postgresql"))) {
            return versions.filter(v -> v.getFileName().toString().matches("\\d+"))
                    .filter(v -> Files.isExecutable(v.resolve("bin/initdb")) && Files.isExecutable(v.resolve("bin/postgres")))
                    .max(Comparator.comparingInt(v -> Integer.parseInt(v.getFileName().toString())))
                    .map(v -> v.resolve("bin"));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** What the server says it is ({@code postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)}), or its path. */
    public static String describe() {
        String postgres = bin("postgres");
        try {
            Process p = new ProcessBuilder(postgres, "--version").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes()).strip();
            return p.waitFor() == 0 && !out.isEmpty() ? out : postgres;
        } catch (IOException e) {
            return postgres;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return postgres;
        }
    }

    private static String bin(String name) {
        return binDir().map(d -> d.resolve(name).toString()).orElseThrow(() -> new IllegalStateException(
                "PostgreSQL's server is needed (initdb and postgres on PATH or under /usr/lib/postgresql/*/bin): apt-get install -y postgresql"));
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
