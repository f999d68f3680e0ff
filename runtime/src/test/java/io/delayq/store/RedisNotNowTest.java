package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.delayq.core.DelayqConfig;
import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;

/**
 * Redis answers that mean "not now" (the REST API's 503 with Retry-After, a taker's quiet retry)
 * rather than "wrong request" (500), each from a real redis-server put in that state: MISCONF
 * (a snapshot that cannot be written), a server at maxclients, a server busy with a script.
 * MISCONF and max clients were error replies (500 on POST /jobs).
 */
class RedisNotNowTest {
    private static Vertx vertx;

    @BeforeAll
    static void startVertx() {
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stopVertx() {
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    /** A gateway of its own client (no connection opened yet), 2 s timeout. */
    private static RedisGateway gateway(RedisProcess redis) {
        DelayqConfig config = (DelayqConfig) java.lang.reflect.Proxy.newProxyInstance(DelayqConfig.class.getClassLoader(),
                new Class<?>[] { DelayqConfig.class }, (proxy, method, args) -> {
                    if (method.getName().equals("redisTimeout")) {
                        return Duration.ofSeconds(2);
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
        return new RedisGateway(Redis.createClient(vertx, redis.uri()), config, new SimpleMeterRegistry());
    }

    private static Request set() {
        return Request.cmd(Command.SET).arg("k").arg("v");
    }

    @Test
    void writesRefusedAfterAFailedSnapshotMeanNotNowForCommandsAndScripts() throws Exception {
        Path dir = Files.createTempDirectory("dq-misconf");
        try (RedisProcess redis = RedisProcess.start(RedisProcess.freePort(),
                List.of("--dir", dir.toString(), "--save", "3600 1", "--appendonly", "no"));
                Resp admin = new Resp(redis.port())) {
            RedisGateway gateway = gateway(redis);
            gateway.send(set());
            // The snapshot's directory gone (even root cannot create a file in it): BGSAVE fails,
            // and with save points and stop-writes-on-bgsave-error (the default) writes are refused.
            Files.delete(dir);
            admin.call("BGSAVE");
            Awaitility.await().atMost(Duration.ofSeconds(10))
                    .until(() -> admin.str("INFO", "persistence").contains("rdb_last_bgsave_status:err"));
            try {
                StoreUnavailableException command = assertThrows(StoreUnavailableException.class, () -> gateway.send(set()));
                assertTrue(command.getMessage().contains("MISCONF"), command.getMessage());
                // The enqueue is a script: the same refusal, from inside Lua.
                StoreUnavailableException script = assertThrows(StoreUnavailableException.class, () -> gateway.send(
                        Request.cmd(Command.EVAL).arg("return redis.call('set', KEYS[1], 'v')").arg(1).arg("k")));
                assertTrue(script.getMessage().contains("MISCONF"), script.getMessage());
                assertEquals("v", gateway.send(Request.cmd(Command.GET).arg("k")).toString(), "reads are answered");
            } finally {
                admin.call("CONFIG", "SET", "save", ""); // else the server's shutdown save fails and it will not stop
            }
            gateway.send(set());
        }
    }

    @Test
    void aServerAtMaxClientsMeansNotNow() {
        try (RedisProcess redis = RedisProcess.startEphemeral(); Resp held = new Resp(redis.port())) {
            held.call("CONFIG", "SET", "maxclients", "1"); // the one client is this connection
            RedisGateway gateway = gateway(redis);
            // Redis writes "-ERR max number of clients reached" and closes; the Vert.x client (4.5)
            // does not always pass that reply on (its connect may wait for the timeout instead):
            // either way it is "not now". The reply itself: RedisGatewayTest.
            assertThrows(StoreUnavailableException.class, () -> gateway.send(Request.cmd(Command.PING)));
            held.call("CONFIG", "SET", "maxclients", "100");
            assertEquals("PONG", gateway.send(Request.cmd(Command.PING)).toString(), "answered once a client slot is free");
        }
    }

    @Test
    void aServerBusyWithAScriptMeansNotNow() {
        try (RedisProcess redis = RedisProcess.start(RedisProcess.freePort(),
                List.of("--save", "", "--appendonly", "no", "--busy-reply-threshold", "50"));
                Resp busy = new Resp(redis.port()); Resp admin = new Resp(redis.port())) {
            RedisGateway gateway = gateway(redis);
            gateway.send(Request.cmd(Command.PING)); // connected before Redis is busy
            CompletableFuture<Void> spin = CompletableFuture.runAsync(() -> {
                try {
                    busy.call("EVAL", "while true do end", "0");
                } catch (RuntimeException killed) {
                    // SCRIPT KILL ends it with an error reply
                }
            });
            try {
                Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                    StoreUnavailableException e = assertThrows(StoreUnavailableException.class,
                            () -> gateway.send(Request.cmd(Command.GET).arg("k")));
                    assertTrue(e.getMessage().contains("BUSY"), e.getMessage());
                });
            } finally {
                admin.call("SCRIPT", "KILL");
                spin.join();
            }
            assertEquals("PONG", gateway.send(Request.cmd(Command.PING)).toString());
        }
    }
}
