package io.delayq.dispatch;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.inject.Inject;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.support.FixedPort;
import io.delayq.support.RedisTestResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.net.PfxOptions;

/**
 * How HTTP targets are called, seen by a real Vert.x server started here (HTTP/1.1 and h2c on one
 * port; each topic posts to its own path): at most {@code max-connections} connections, kept alive
 * and reused across jobs, HTTP/2 (one multiplexed connection) when the topic says {@code h2c}, and
 * HTTP/2 by ALPN to an {@code https} target whose self-signed certificate a Quarkus TLS
 * configuration trusts.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(HttpTargetConnectionsTest.Targets.class)
class HttpTargetConnectionsTest {
    static final String LIMITED = "http-limited";
    static final String KEEP_ALIVE = "http-keep-alive";
    static final String H2C = "http-h2c";
    static final String TLS = "http-tls";
    static final String DEAD_TLS = "dead-tls";

    public static class Targets implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            String base = "http://127.0.0.1:" + FixedPort.forRun("connections-target");
            return Map.ofEntries(Map.entry("delayq.topics." + LIMITED + ".http.url", base + "/" + LIMITED),
                    Map.entry("delayq.topics." + LIMITED + ".http.max-connections", "3"),
                    Map.entry("delayq.topics." + LIMITED + ".concurrency", "20"),
                    Map.entry("delayq.topics." + KEEP_ALIVE + ".http.url", base + "/" + KEEP_ALIVE),
                    Map.entry("delayq.topics." + KEEP_ALIVE + ".http.max-connections", "2"),
                    Map.entry("delayq.topics." + H2C + ".http.url", base + "/" + H2C),
                    Map.entry("delayq.topics." + H2C + ".http.h2c", "true"),
                    Map.entry("delayq.topics." + H2C + ".http.max-connections", "1"),
                    Map.entry("delayq.topics." + H2C + ".concurrency", "20"),
                    Map.entry("delayq.topics." + TLS + ".http.url",
                            "https://localhost:" + FixedPort.forRun("connections-tls-target") + "/" + TLS),
                    Map.entry("delayq.topics." + TLS + ".http.tls-configuration-name", "target"),
                    Map.entry("quarkus.tls.target.trust-store.pem.certs", TargetCertificate.get().cert().toString()),
                    // A target nobody listens on, one attempt: its jobs die, and their callbacks go
                    // to an https dead-url trusted through the topic's TLS configuration.
                    Map.entry("delayq.topics." + DEAD_TLS + ".http.url", "http://127.0.0.1:9/" + DEAD_TLS),
                    Map.entry("delayq.topics." + DEAD_TLS + ".max-attempts", "1"),
                    Map.entry("delayq.topics." + DEAD_TLS + ".http.tls-configuration-name", "target"),
                    Map.entry("delayq.topics." + DEAD_TLS + ".dead-url",
                            "https://localhost:" + FixedPort.forRun("connections-tls-target") + "/" + DEAD_TLS + "-hook"));
        }
    }

    /**
     * A self-signed certificate for localhost made by keytool for the run (the profile is read by
     * more than one class loader: the files are made once, their directory kept in a property).
     */
    record TargetCertificate(Path keyStore, Path cert) {
        static synchronized TargetCertificate get() {
            try {
                String dir = System.getProperty("dqtest.tls-target.dir");
                if (dir == null) {
                    Path d = Files.createTempDirectory("delayq-tls-target");
                    String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
                    run(keytool, "-genkeypair", "-alias", "target", "-keyalg", "EC", "-dname", "CN=localhost", "-ext",
                            "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2", "-storetype", "PKCS12", "-keystore",
                            d.resolve("target.p12").toString(), "-storepass", "secret");
                    run(keytool, "-exportcert", "-rfc", "-alias", "target", "-keystore", d.resolve("target.p12").toString(),
                            "-storepass", "secret", "-file", d.resolve("target.pem").toString());
                    dir = d.toString();
                    System.setProperty("dqtest.tls-target.dir", dir);
                }
                return new TargetCertificate(Path.of(dir, "target.p12"), Path.of(dir, "target.pem"));
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }

        private static void run(String... cmd) throws IOException, InterruptedException {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (p.waitFor() != 0) {
                throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
            }
        }
    }

    /** What the server saw on one path. */
    static final class Seen {
        final Set<String> jobs = ConcurrentHashMap.newKeySet();
        final Set<Integer> connections = ConcurrentHashMap.newKeySet(); // client ports
        final Set<HttpVersion> versions = ConcurrentHashMap.newKeySet();
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicInteger maxInFlight = new AtomicInteger();
        final AtomicInteger openConnections = new AtomicInteger();
        final AtomicInteger maxOpenConnections = new AtomicInteger();
    }

    static final Map<String, Seen> SEEN = new ConcurrentHashMap<>();
    /** How long the server holds each call, by path. */
    static final Map<String, Long> HOLD_MS = Map.of("/" + LIMITED, 300L, "/" + KEEP_ALIVE, 0L, "/" + H2C, 300L, "/" + TLS, 0L);
    static Vertx vertx;
    static HttpServer server;
    static HttpServer tlsServer;

    @BeforeAll
    static void startTarget() throws Exception {
        vertx = Vertx.vertx();
        server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1")
                .setPort(FixedPort.forRun("connections-target")).setHttp2ClearTextEnabled(true));
        server.connectionHandler(c -> {
            // A connection belongs to a path once its first call arrived: counted from there.
            c.closeHandler(v -> SEEN.values().forEach(s -> {
                if (s.connections.contains(c.remoteAddress().port())) {
                    s.openConnections.decrementAndGet();
                }
            }));
        });
        server.requestHandler(req -> {
            Seen s = SEEN.computeIfAbsent(req.path(), k -> new Seen());
            if (s.connections.add(req.connection().remoteAddress().port())) {
                s.maxOpenConnections.accumulateAndGet(s.openConnections.incrementAndGet(), Math::max);
            }
            s.versions.add(req.version());
            s.maxInFlight.accumulateAndGet(s.inFlight.incrementAndGet(), Math::max);
            req.end().onComplete(v -> {
                Runnable answer = () -> {
                    s.jobs.add(req.getHeader("X-Delayq-Job-Id"));
                    s.inFlight.decrementAndGet();
                    req.response().setStatusCode(204).end();
                };
                long hold = HOLD_MS.getOrDefault(req.path(), 0L);
                if (hold > 0) {
                    vertx.setTimer(hold, t -> answer.run());
                } else {
                    answer.run();
                }
            });
        });
        server.listen().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        // The same handler over TLS, offering HTTP/2 and HTTP/1.1 by ALPN.
        tlsServer = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1")
                .setPort(FixedPort.forRun("connections-tls-target")).setSsl(true).setUseAlpn(true)
                .setKeyCertOptions(new PfxOptions().setPath(TargetCertificate.get().keyStore().toString()).setPassword("secret")));
        tlsServer.requestHandler(server.requestHandler());
        tlsServer.listen().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @AfterAll
    static void stopTarget() throws Exception {
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @Inject
    Jobs jobs;

    private Seen deliver(String topic, int n) {
        for (int i = 0; i < n; i++) {
            jobs.schedule(JobRequest.topic(topic).id(DispatchTest.uid("c")));
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> SEEN.containsKey("/" + topic)
                && SEEN.get("/" + topic).jobs.size() >= n);
        return SEEN.get("/" + topic);
    }

    @Test
    void aTargetThatHoldsItsCallsSeesAtMostMaxConnectionsConnectionsAndCalls() {
        // 12 jobs that may all run at once (concurrency 20), each call held 300 ms: only 3 connections.
        Seen s = deliver(LIMITED, 12);
        assertEquals(3, s.maxInFlight.get(), "calls in flight at once, with max-connections 3");
        assertTrue(s.maxOpenConnections.get() <= 3, "connections open at once: " + s.maxOpenConnections.get());
        assertTrue(s.connections.size() <= 3, "connections used: " + s.connections);
        assertEquals(Set.of(HttpVersion.HTTP_1_1), s.versions);
    }

    @Test
    void connectionsAreKeptAliveAndReusedFromJobToJob() {
        Seen s = deliver(KEEP_ALIVE, 40);
        assertTrue(s.connections.size() <= 2, "40 calls over " + s.connections.size() + " connections");
        assertEquals(Set.of(HttpVersion.HTTP_1_1), s.versions);
    }

    @Test
    void anH2cTargetIsCalledOverHttp2WithManyCallsOnOneConnection() {
        Seen s = deliver(H2C, 10);
        assertEquals(Set.of(HttpVersion.HTTP_2), s.versions);
        assertEquals(1, s.connections.size(), "connections: " + s.connections);
        assertTrue(s.maxInFlight.get() > 1, "calls in flight at once on the one connection: " + s.maxInFlight.get());
    }

    @Test
    void aDeadJobsCallbackToAnHttpsDeadUrlIsTrustedThroughTheTopicsTlsConfiguration() {
        String id = DispatchTest.uid("dead");
        jobs.schedule(JobRequest.topic(DEAD_TLS).id(id));
        // The hook's certificate is trusted only through quarkus.tls.target: the JVM's CAs would refuse it.
        await().atMost(Duration.ofSeconds(20)).until(() -> SEEN.containsKey("/" + DEAD_TLS + "-hook")
                && SEEN.get("/" + DEAD_TLS + "-hook").jobs.contains(id));
    }

    @Test
    void anHttpsTargetTrustedThroughATlsConfigurationIsCalledOverHttp2NegotiatedByAlpn() {
        Seen s = deliver(TLS, 5);
        assertEquals(Set.of(HttpVersion.HTTP_2), s.versions);
    }
}
