package io.delayq.store;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import io.delayq.core.DelayqConfig;
import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.quarkus.runtime.configuration.DurationConverter;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfig;
import io.smallrye.config.SmallRyeConfigBuilder;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisOptions;

/**
 * The store as the extension's beans make it, built by hand for plain JUnit tests of its
 * scripts: no application, no CDI, no dispatcher that could take a test's jobs. One real
 * redis-server serves the whole test JVM (a free port, nothing persisted, stopped at exit); each
 * test works on topics of its own ({@link #fresh}) rather than flushing it. The configuration is
 * delayq's defaults plus what the test class names, such as the topics it needs configured
 * ({@code delayq.topics.grp-1.group-max-in-flight=1}), read by SmallRye Config as Quarkus reads
 * {@code application.properties}.
 */
public final class HandBuiltStore {
    private static final AtomicInteger TOPIC_SEQ = new AtomicInteger();
    /** Told apart from the topics of an earlier run, should the server be a kept one. */
    private static final String RUN = Long.toString(System.nanoTime() % 1_000_000, 36);
    private static RedisProcess server;
    private static Vertx vertx;

    final DelayqConfig config;
    final Redis client;
    final RedisGateway gateway;
    final Scripts scripts;
    final Keys keys;
    final StoreLayer layer;
    final JobQueue queue;
    final Inspection inspection;
    final TopicAdmin topicAdmin;

    private HandBuiltStore(DelayqConfig config) {
        this(config, server().uri());
    }

    private HandBuiltStore(DelayqConfig config, String uri) {
        this.config = config;
        // The pool the extension gives the application's client (DelayqProcessor's defaults):
        // under a burst, callers wait for a connection rather than fail.
        this.client = Redis.createClient(vertx(), new RedisOptions().setConnectionString(uri)
                .setMaxPoolSize(16).setMaxPoolWaiting(4096));
        this.gateway = new RedisGateway(client, config, new SimpleMeterRegistry());
        this.scripts = new Scripts(gateway, new SimpleMeterRegistry());
        this.keys = new Keys(config);
        this.layer = new StoreLayer(gateway, scripts, keys, config);
        this.queue = new JobQueue(layer);
        this.inspection = new Inspection(layer);
        this.topicAdmin = new TopicAdmin(layer);
    }

    /** A store on the tests' Redis configured by {@code properties}: name, value, name, value... */
    static HandBuiltStore configured(String... properties) {
        return new HandBuiltStore(read(properties));
    }

    /** The job path of a store {@link #configured} so: for tests of the dispatch package. */
    public static JobQueue queue(String... properties) {
        return configured(properties).queue;
    }

    /** As {@link #configured}, on another Redis (a test that changes the server's settings). */
    static HandBuiltStore on(RedisProcess redis, String... properties) {
        return new HandBuiltStore(read(properties), redis.uri());
    }

    static DelayqConfig read(String... properties) {
        Map<String, String> given = new HashMap<>();
        for (int i = 0; i < properties.length; i += 2) {
            given.put(properties[i], properties[i + 1]);
        }
        // Durations as Quarkus reads them ("5s", "365d"), which plain SmallRye Config does not.
        SmallRyeConfig read = new SmallRyeConfigBuilder().withMapping(DelayqConfig.class)
                .withConverter(Duration.class, 200, new DurationConverter())
                .withSources(new PropertiesConfigSource(given, "test class", 500)).build();
        return read.getConfigMapping(DelayqConfig.class);
    }

    /** The tests' redis-server, started on first use. */
    static synchronized RedisProcess server() {
        if (server == null) {
            server = RedisProcess.startEphemeral();
            Runtime.getRuntime().addShutdownHook(new Thread(server::stop));
        }
        return server;
    }

    /** A connection to the tests' Redis, for assertions on its keys; the caller closes it. */
    static Resp resp() {
        return new Resp(server().port());
    }

    /** A topic name no other test uses. */
    static String fresh(String what) {
        return what + "-" + RUN + "-" + TOPIC_SEQ.incrementAndGet();
    }

    /** The key prefix of partition 0 of a topic under the default prefix and partitions. */
    static String keysOf(String topic) {
        return "dq:{" + topic + "#0}:";
    }

    private static synchronized Vertx vertx() {
        if (vertx == null) {
            vertx = Vertx.vertx();
        }
        return vertx;
    }
}
