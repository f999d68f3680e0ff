package io.delayq.dev;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import redis.embedded.core.ExecutableProvider;

/**
 * A real redis-server child process on a loopback port, for dev mode and the tests: the server
 * named by {@value #SERVER_ENV} (a path, or a name on PATH, e.g. {@code valkey-server}), else
 * {@code redis-server} on PATH, else {@code valkey-server} on PATH, else the binary shipped inside
 * embedded-redis. Not a mock: it is the same server production runs (Redis 7.x or Valkey 8 from
 * PATH, Redis 6.2 embedded).
 */
public final class RedisProcess implements AutoCloseable {
    private final String executable;
    private final int port;
    private final List<String> extraArgs;
    private Process process;
    private boolean stopAtExit;

    private RedisProcess(String executable, int port, List<String> extraArgs) {
        this.executable = executable;
        this.port = port;
        this.extraArgs = extraArgs;
    }

    /** Starts a throw-away server (no persistence) on a free port. */
    public static RedisProcess startEphemeral() {
        return start(freePort(), List.of("--save", "", "--appendonly", "no"));
    }

    public static RedisProcess start(int port, List<String> extraArgs) {
        return start(executable(), port, extraArgs);
    }

    /** Starts a given redis-server binary. */
    public static RedisProcess start(String executable, int port, List<String> extraArgs) {
        RedisProcess p = new RedisProcess(executable, port, extraArgs);
        p.start();
        return p;
    }

    public synchronized void start() {
        if (process != null && process.isAlive()) {
            return;
        }
        List<String> cmd = new ArrayList<>(List.of(executable, "--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--protected-mode", "no"));
        cmd.addAll(extraArgs);
        if (!stopAtExit) {
            // A child redis-server outlives its JVM unless stopped: never leave one behind.
            Runtime.getRuntime().addShutdownHook(new Thread(this::stop, "redis-server-" + port + "-stop"));
            stopAtExit = true;
        }
        try {
            process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + executable, e);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!ping()) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                process.destroyForcibly(); // never leave a half-started server behind
                throw new IllegalStateException(executable + " on port " + port + " did not start");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    /** Kills the server (the tests use it to take Redis away); {@link #start()} brings it back on the same port. */
    public synchronized void stop() {
        if (process != null) {
            process.destroy();
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process = null;
        }
    }

    @Override
    public void close() {
        stop();
    }

    /** The redis-server binary this process runs. */
    public String executablePath() {
        return executable;
    }

    public int port() {
        return port;
    }

    public long pid() {
        return process == null ? -1 : process.pid();
    }

    public String uri() {
        return "redis://127.0.0.1:" + port;
    }

    /** True when the server answers PING with PONG. */
    public boolean ping() {
        return ping("127.0.0.1", port);
    }

    /** True when the server at {@code redis://host:port} answers PING with PONG. */
    public static boolean ping(String uri) {
        URI u = URI.create(uri);
        return u.getPort() > 0 && ping(u.getHost(), u.getPort());
    }

    private static boolean ping(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 200);
            s.setSoTimeout(500);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            byte[] buf = new byte[7];
            InputStream in = s.getInputStream();
            int n = in.read(buf);
            return n > 0 && new String(buf, 0, n, StandardCharsets.US_ASCII).startsWith("+PONG");
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Names the server binary the tests and the Dev Service run (a path, or a name on PATH):
     * {@code DELAYQ_REDIS_SERVER=valkey-server} runs them against Valkey.
     */
    public static final String SERVER_ENV = "DELAYQ_REDIS_SERVER";
    /** Names the command-line client the cluster tests use ({@code valkey-cli} with Valkey). */
    public static final String CLI_ENV = "DELAYQ_REDIS_CLI";

    /** The server from {@value #SERVER_ENV} or PATH (see the class), else the binary carried by embedded-redis, extracted once. */
    public static String executable() {
        String server = serverOnPath();
        return server != null ? server : embeddedExecutable();
    }

    /**
     * The server {@value #SERVER_ENV} names, else {@code redis-server} on PATH, else
     * {@code valkey-server} on PATH; null when there is none (a Redis Cluster or Sentinel needs one:
     * the embedded 6.2 binary is for single servers).
     */
    public static String serverOnPath() {
        return chosen(SERVER_ENV, "redis-server", "valkey-server");
    }

    /** The client {@value #CLI_ENV} names, else {@code redis-cli}, else {@code valkey-cli} on PATH; null when none. */
    public static String cliOnPath() {
        return chosen(CLI_ENV, "redis-cli", "valkey-cli");
    }

    private static String chosen(String env, String... names) {
        String named = System.getenv(env);
        if (named != null && !named.isBlank()) {
            String found = named.contains("/") ? (Files.isExecutable(Path.of(named)) ? named : null) : onPath(named);
            if (found == null) {
                throw new IllegalStateException(env + "=" + named + ": no such executable");
            }
            return found;
        }
        for (String name : names) {
            String found = onPath(name);
            if (found != null) {
                return found;
            }
        }
        return null;
    }

    /** An executable of that name on PATH, or null. */
    public static String onPath(String name) {
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                Path candidate = Path.of(dir, name);
                if (Files.isExecutable(candidate)) {
                    return candidate.toString();
                }
            }
        }
        return null;
    }

    /** What the binary says it is ({@code Redis server v=7.0.15}, {@code Valkey server v=8.0.1}), or its path when it says nothing. */
    public static String describe(String executable) {
        try {
            Process p = new ProcessBuilder(executable, "--version").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            p.waitFor(5, TimeUnit.SECONDS);
            // "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=..."
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("^(\\S+ server v=\\S+)").matcher(out);
            return m.find() ? m.group(1) : executable;
        } catch (IOException e) {
            return executable;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return executable;
        }
    }

    /** The real redis-server (6.2) binary carried by the embedded-redis artifact, extracted to a temp file. */
    public static String embeddedExecutable() {
        try {
            File f = ExecutableProvider.newJarResourceProvider().get();
            f.setExecutable(true);
            return f.getAbsolutePath();
        } catch (IOException e) {
            throw new IllegalStateException("no redis-server on PATH and the embedded one cannot be extracted", e);
        }
    }

    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
