package io.delayq.outbox.deployment;

import java.util.List;

import io.delayq.dev.RedisProcess;

/**
 * A redis-server of a test's own that the test can kill and start again on the same port. Found
 * again through system properties, as a test class is loaded twice (by JUnit and by the test
 * application's class loader).
 */
final class OwnRedis {
    private OwnRedis() {
    }

    /** The URI of the server called {@code name}, started on first use. */
    static synchronized String uri(String name) {
        if (System.getProperty(key(name, "port")) == null) {
            RedisProcess redis = RedisProcess.startEphemeral();
            System.setProperty(key(name, "port"), Integer.toString(redis.port()));
            System.setProperty(key(name, "pid"), Long.toString(redis.pid()));
        }
        return "redis://127.0.0.1:" + System.getProperty(key(name, "port"));
    }

    /** The port of the server called {@code name}, started on first use. */
    static int port(String name) {
        uri(name);
        return Integer.parseInt(System.getProperty(key(name, "port")));
    }

    /** SIGKILLs the server and waits until it is gone. */
    static void kill(String name) {
        ProcessHandle.of(Long.parseLong(System.getProperty(key(name, "pid")))).ifPresent(p -> {
            p.destroyForcibly();
            p.onExit().join();
        });
    }

    /** Starts it again, empty, on its port. */
    static void start(String name) {
        RedisProcess redis = RedisProcess.start(Integer.parseInt(System.getProperty(key(name, "port"))),
                List.of("--save", "", "--appendonly", "no"));
        System.setProperty(key(name, "pid"), Long.toString(redis.pid()));
    }

    private static String key(String name, String what) {
        return "dqtest." + name + ".redis." + what;
    }
}
