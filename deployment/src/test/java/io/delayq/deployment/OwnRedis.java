package io.delayq.deployment;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

import io.delayq.dev.RedisProcess;

/**
 * A redis-server of a test's own, started once per name: a test class is loaded twice (by JUnit
 * and by the test application's class loader), so the server is found again through system
 * properties rather than a static field.
 */
final class OwnRedis {
    private OwnRedis() {
    }

    /** The URI of the server called {@code name}, started (and sent {@code commands}) on first use. */
    static synchronized String uri(String name, String... commands) {
        String key = "dqtest." + name + ".uri";
        if (System.getProperty(key) == null) {
            RedisProcess redis = RedisProcess.startEphemeral();
            for (String command : commands) {
                try (Socket s = new Socket("127.0.0.1", redis.port())) {
                    s.getOutputStream().write((command + "\r\n").getBytes(StandardCharsets.US_ASCII));
                    s.getInputStream().read(new byte[64]);
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            }
            System.setProperty(key, redis.uri());
            System.setProperty("dqtest." + name + ".pid", Long.toString(redis.pid()));
        }
        return System.getProperty(key);
    }

    static void stop(String name) {
        String pid = System.getProperty("dqtest." + name + ".pid");
        if (pid != null) {
            ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroy);
        }
    }
}
