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
 * A real redis-server child process on a loopback port, for dev mode and the tests: the
 * {@code redis-server} on PATH, else the binary shipped inside embedded-redis. Not a mock: it is
 * the same server production runs (7.x from PATH, 6.2 embedded).
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

    /** redis-server from PATH, else the binary carried by embedded-redis, extracted once. */
    public static String executable() {
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                Path candidate = Path.of(dir, "redis-server");
                if (Files.isExecutable(candidate)) {
                    return candidate.toString();
                }
            }
        }
        return embeddedExecutable();
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
