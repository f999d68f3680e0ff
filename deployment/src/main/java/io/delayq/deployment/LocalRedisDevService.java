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
 */
final class LocalRedisDevService implements Startable {
    private static final Logger LOG = Logger.getLogger(LocalRedisDevService.class);
    private final boolean persistent;
    private RedisProcess redis;

    LocalRedisDevService(boolean persistent) {
        this.persistent = persistent;
    }

    @Override
    public void start() {
        List<String> args = List.of("--save", "", "--appendonly", "no");
        Path dir = null;
        if (persistent) {
            try {
                dir = Files.createDirectories(Path.of("target", "delayq-dev-redis").toAbsolutePath());
            } catch (IOException e) {
                throw new IllegalStateException("cannot create the dev Redis data directory", e);
            }
            args = List.of("--dir", dir.toString(), "--appendonly", "yes", "--appendfsync", "everysec", "--save", "");
        }
        redis = RedisProcess.start(RedisProcess.freePort(), args);
        LOG.infof("delayq Dev Service: redis-server (%s) at %s%s; set quarkus.redis.hosts to use another Redis",
                RedisProcess.executable(), redis.uri(), dir == null ? "" : ", data in " + dir);
    }

    @Override
    public String getConnectionInfo() {
        return redis.uri();
    }

    @Override
    public String getContainerId() {
        return null;
    }

    @Override
    public void close() {
        if (redis != null) {
            LOG.infof("delayq Dev Service: stopping redis-server at %s", redis.uri());
            redis.stop();
            redis = null;
        }
    }
}
