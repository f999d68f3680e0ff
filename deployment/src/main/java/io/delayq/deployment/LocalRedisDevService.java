package io.delayq.deployment;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.jboss.logging.Logger;

import io.delayq.dev.RedisProcess;
import io.quarkus.deployment.builditem.Startable;

/**
 * The Dev Service's Redis: a real {@code redis-server} child process on a free loopback port, no
 * container. In dev mode its data survives live reloads and restarts of the service (AOF in
 * {@code target/delayq-dev-redis}); in test mode it keeps nothing.
 * <p>
 * One server per kind lives as long as the JVM (a shutdown hook stops it): Quarkus' Dev Services
 * registry closes a service when a test profile restarts the application, and every restart
 * loads this class anew, so the server is found again through system properties instead
 * (names outside any configuration prefix, so the application's config ignores them). Test
 * classes of one run, and live reloads, all get the same Redis.
 */
final class LocalRedisDevService implements Startable {
    private static final Logger LOG = Logger.getLogger(LocalRedisDevService.class);
    private final boolean persistent;
    private final String uriProperty;
    private String uri;

    LocalRedisDevService(boolean persistent) {
        this.persistent = persistent;
        this.uriProperty = "io.delayq.devservice." + (persistent ? "persistent" : "ephemeral") + ".uri";
    }

    @Override
    public void start() {
        synchronized (System.getProperties()) {
            String running = System.getProperty(uriProperty);
            if (running != null && RedisProcess.ping(running)) {
                uri = running;
                LOG.infof("delayq Dev Service: reusing redis-server at %s", uri);
                return;
            }
            RedisProcess redis = RedisProcess.start(RedisProcess.freePort(), arguments());
            uri = redis.uri();
            System.setProperty(uriProperty, uri);
            // Whichever server it found (DELAYQ_REDIS_SERVER, redis-server or valkey-server on PATH, the embedded one).
            LOG.infof("delayq Dev Service: %s (%s) at %s%s; set quarkus.redis.hosts to use another Redis",
                    RedisProcess.describe(redis.executablePath()), redis.executablePath(), uri, persistent ? ", data in " + dataDir() : "");
        }
    }

    private List<String> arguments() {
        if (!persistent) {
            return List.of("--save", "", "--appendonly", "no");
        }
        try {
            Files.createDirectories(dataDir());
        } catch (IOException e) {
            throw new IllegalStateException("cannot create the dev Redis data directory " + dataDir(), e);
        }
        return List.of("--dir", dataDir().toString(), "--appendonly", "yes", "--appendfsync", "everysec", "--save", "");
    }

    private static Path dataDir() {
        return Path.of("target", "delayq-dev-redis").toAbsolutePath();
    }

    @Override
    public String getConnectionInfo() {
        return uri;
    }

    @Override
    public String getContainerId() {
        return null;
    }

    /** Nothing to do: the server outlives the application and stops with the JVM (see above). */
    @Override
    public void close() {
    }
}
