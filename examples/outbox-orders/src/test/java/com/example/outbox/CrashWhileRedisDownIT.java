package com.example.outbox;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.delayq.dev.PostgresProcess;
import io.delayq.dev.RedisProcess;

/**
 * The outbox through real process faults (issue 34): the packaged service (this example) on a
 * PostgreSQL and a redis-server of the test's own; Redis SIGKILLed, 20 orders committed while it
 * is down (each with its close job, due at once), the service SIGKILLed, then Redis and the
 * service started again: every order's job runs exactly once and delayq_outbox ends empty.
 */
class CrashWhileRedisDownIT {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final List<Process> services = new ArrayList<>();
    private PostgresProcess pg;
    private RedisProcess redis;

    @AfterEach
    void stop() {
        services.forEach(Process::destroyForcibly);
        if (redis != null) {
            redis.close();
        }
        if (pg != null) {
            pg.close();
        }
    }

    @Test
    void ordersCommittedWhileRedisIsDownCloseOnceAfterTheServiceIsKilled() throws Exception {
        pg = PostgresProcess.startEphemeral();
        redis = RedisProcess.startEphemeral();
        int port = RedisProcess.freePort();
        Process service = start(port);

        ProcessHandle.of(redis.pid()).ifPresent(ProcessHandle::destroyForcibly); // SIGKILL
        redis.stop();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders"))
                    .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.noBody()).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(201, r.statusCode(), "an order commits while Redis is down: " + r.body());
            ids.add(r.body().replaceAll(".*\"id\":\"([^\"]+)\".*", "$1"));
        }
        assertEquals(20, count("SELECT count(*) FROM delayq_outbox"), "the 20 jobs wait in the outbox");

        service.destroyForcibly().waitFor(); // SIGKILL
        redis.start();
        start(port);

        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
                .until(() -> count("SELECT count(*) FROM orders WHERE close_runs > 0") == 20
                        && count("SELECT count(*) FROM delayq_outbox") == 0);
        Map<String, Integer> runs = new TreeMap<>();
        try (Connection c = connect(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT id, close_runs FROM orders")) {
            while (rs.next()) {
                runs.put(rs.getString(1), rs.getInt(2));
            }
        }
        assertEquals(new TreeMap<>(ids.stream().collect(java.util.stream.Collectors.toMap(id -> id, id -> 1))), runs,
                "every order's close job ran exactly once");
    }

    /** The packaged service on {@code port}, its close jobs due at once; waits until it answers. */
    private Process start(int port) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        File jar = Path.of("target", "quarkus-app", "quarkus-run.jar").toFile();
        Process p = new ProcessBuilder(java, "-Xmx256m", "-Dquarkus.http.port=" + port,
                "-Dquarkus.redis.hosts=" + redis.uri(), "-Dquarkus.datasource.jdbc.url=" + pg.jdbcUrl(),
                "-Dquarkus.datasource.username=app", "-Dorders.close-after=0s", "-jar", jar.getAbsolutePath())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(
                        Path.of("target", "crash-it-service.log").toFile()))
                .start();
        services.add(p);
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> {
            if (!p.isAlive()) {
                throw new IllegalStateException("the service exited (" + p.exitValue() + "): see target/crash-it-service.log");
            }
            try {
                return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/q/health/live")).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
            } catch (java.io.IOException e) {
                return false;
            }
        });
        return p;
    }

    private Connection connect() throws SQLException {
        return DriverManager.getConnection(pg.jdbcUrl(), "app", "");
    }

    private long count(String sql) throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
