package io.delayq.dev;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;
import io.smallrye.common.annotation.Identifier;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.quarkus.redis.client.RedisHostsProvider;

/**
 * Dev mode's Redis when {@code quarkus.redis.hosts} is not set (application.properties points
 * {@code %dev.quarkus.redis.hosts-provider-name} here; a configured host always wins). Starts a
 * local redis-server once per JVM — it survives live reloads — with its data in
 * {@code target/delayq-dev-redis} (AOF), and stops it when the JVM exits.
 */
@ApplicationScoped
@Identifier("delayq-local")
public class LocalRedisHostsProvider implements RedisHostsProvider {
    private static final Logger LOG = Logger.getLogger(LocalRedisHostsProvider.class);
    private static RedisProcess server;
    private final DelayqConfig config;

    public LocalRedisHostsProvider(DelayqConfig config) {
        this.config = config;
    }

    @Override
    public Set<URI> getHosts() {
        if (!config.localRedis().enabled()) {
            throw new IllegalStateException("no quarkus.redis.hosts configured and delayq.local-redis.enabled=false");
        }
        return Set.of(URI.create(ensureStarted().uri()));
    }

    private static synchronized RedisProcess ensureStarted() {
        if (server == null) {
            try {
                Path dir = Path.of("target", "delayq-dev-redis").toAbsolutePath();
                Files.createDirectories(dir);
                int port = RedisProcess.freePort();
                server = RedisProcess.start(port, List.of("--dir", dir.toString(), "--appendonly", "yes",
                        "--appendfsync", "everysec", "--save", ""));
                RedisProcess s = server;
                Runtime.getRuntime().addShutdownHook(new Thread(s::stop, "delayq-local-redis-stop"));
                LOG.infof("no quarkus.redis.hosts configured: started a local redis-server (%s) at %s, data in %s",
                        RedisProcess.executable(), s.uri(), dir);
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        }
        return server;
    }
}
