package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import org.junit.jupiter.api.Test;

import io.vertx.redis.client.impl.types.ErrorType;

/**
 * How failures of the Redis client are classified: a request whose connection died under it
 * (Redis killed, restarted, failed over) means "Redis unavailable" (503, retried), not an error
 * reply (500). Seen as 500s on POST /jobs in AofRestartIT and SentinelFailoverIT.
 */
class RedisGatewayTest {

    @Test
    void aRequestWhoseConnectionClosedMeansRedisIsUnavailable() {
        assertInstanceOf(StoreUnavailableException.class, RedisGateway.translate(ErrorType.create("CONNECTION_CLOSED")));
    }

    @Test
    void aBatchWhoseConnectionFailedMeansRedisIsUnavailable() {
        assertInstanceOf(StoreUnavailableException.class,
                RedisGateway.translate(ErrorType.create("ERR [0] java.net.SocketException: Connection reset")));
        assertInstanceOf(StoreUnavailableException.class,
                RedisGateway.translate(ErrorType.create("ERR [1] io.netty.channel.StacklessClosedChannelException")));
        assertInstanceOf(StoreUnavailableException.class, RedisGateway.translate(ErrorType.create("ERR [1] CONNECTION_CLOSED")));
        // Every request of the batch failed: one line each.
        assertInstanceOf(StoreUnavailableException.class, RedisGateway.translate(ErrorType.create(
                "ERR [0] io.netty.channel.StacklessClosedChannelException" + System.lineSeparator()
                        + "ERR [1] io.netty.channel.StacklessClosedChannelException")));
    }

    @Test
    void errorRepliesOfRedisStayErrors() {
        assertInstanceOf(RedisReplyException.class, RedisGateway.translate(
                ErrorType.create("WRONGTYPE Operation against a key holding the wrong kind of value")));
        assertInstanceOf(RedisReplyException.class, RedisGateway.translate(
                ErrorType.create("ERR user_script:12: Script attempted to access nonexistent global variable 'x'")));
        assertInstanceOf(StoreUnavailableException.class,
                RedisGateway.translate(ErrorType.create("LOADING Redis is loading the dataset in memory")));
        assertInstanceOf(StoreUnavailableException.class, RedisGateway.translate(ErrorType.create(
                "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.")));
        assertInstanceOf(StoreUnavailableException.class,
                RedisGateway.translate(ErrorType.create("ERR max number of clients reached")));
        // The code is the first word: BUSYKEY (a RESTORE onto an existing key) is no BUSY.
        assertInstanceOf(RedisReplyException.class,
                RedisGateway.translate(ErrorType.create("BUSYKEY Target key name already exists.")));
    }

    @Test
    void aRedirectInsideABatchMeansTryAgainNotAnError() {
        // The cluster client follows MOVED/ASK for single commands, not inside a batch (the
        // durable enqueue: script + WAIT); its slot map refreshes within a second.
        assertInstanceOf(StoreUnavailableException.class,
                RedisGateway.translate(ErrorType.create("ERR [0] MOVED 3999 127.0.0.1:7002")));
        assertInstanceOf(StoreUnavailableException.class,
                RedisGateway.translate(ErrorType.create("ERR [0] ASK 3999 127.0.0.1:7002")));
    }

    @Test
    void refusedCredentialsMeanRedisIsUnavailableAndSaySo() {
        for (String reply : new String[] { "WRONGPASS invalid username-password pair or user is disabled.",
                "NOAUTH Authentication required.", "ERR invalid password",
                "NOAUTH HELLO must be called with the client already authenticated",
                "ERR Protocol error: unauthenticated multibulk length" }) {
            RuntimeException e = RedisGateway.translate(ErrorType.create(reply));
            RedisCredentialsException refused = assertInstanceOf(RedisCredentialsException.class, e);
            org.junit.jupiter.api.Assertions.assertTrue(refused.refused(), reply);
            org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().startsWith("Redis refused delayq's credentials ("
                    + reply), e.getMessage());
        }
    }

    /** The probe's case: a user Redis knows, with a password that is not its own. */
    @Test
    void aWrongPasswordIsRefusedOnceNamedAndNeverShown() throws Exception {
        String user = HandBuiltStore.fresh("probe");
        try (io.delayq.dev.Resp admin = HandBuiltStore.resp()) {
            admin.call("ACL", "SETUSER", user, "on", ">RightPass99", "~*", "+@all");
        }
        io.vertx.core.Vertx vertx = io.vertx.core.Vertx.vertx();
        try {
            io.vertx.redis.client.Redis client = io.vertx.redis.client.Redis.createClient(vertx,
                    new io.vertx.redis.client.RedisOptions().setConnectionString(
                            "redis://" + user + ":WrongPass77@127.0.0.1:" + HandBuiltStore.server().port()));
            RedisGateway gateway = new RedisGateway(client, HandBuiltStore.configured().config,
                    new io.micrometer.core.instrument.simple.SimpleMeterRegistry());
            RedisCredentialsException e = org.junit.jupiter.api.Assertions.assertThrows(RedisCredentialsException.class,
                    () -> gateway.send(io.vertx.redis.client.Request.cmd(io.vertx.redis.client.Command.PING)));
            org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("WRONGPASS"), e.getMessage());
            org.junit.jupiter.api.Assertions.assertFalse(e.getMessage().contains("WrongPass77"), e.getMessage());
            org.junit.jupiter.api.Assertions.assertEquals(e.getMessage(), gateway.credentialsRefused().orElseThrow());
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
            try (io.delayq.dev.Resp admin = HandBuiltStore.resp()) {
                admin.call("ACL", "DELUSER", user);
            }
        }
    }
}
