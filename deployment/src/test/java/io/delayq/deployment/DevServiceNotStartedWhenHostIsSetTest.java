package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.quarkus.test.QuarkusUnitTest;

/** A configured {@code quarkus.redis.hosts} wins: the Dev Service starts nothing. */
class DevServiceNotStartedWhenHostIsSetTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClass(OwnRedis.class))
            .overrideConfigKey("quarkus.redis.hosts", OwnRedis.uri("host-is-set"))
            .setLogRecordPredicate(r -> r.getLoggerName().startsWith("io.delayq"))
            .assertLogRecords(records -> assertTrue(
                    records.stream().noneMatch(r -> r.getMessage().startsWith("delayq Dev Service: redis-server")),
                    "the Dev Service must not start"));

    @AfterAll
    static void stopOwnRedis() {
        OwnRedis.stop("host-is-set");
    }

    @Test
    void theConfiguredRedisIsUsed() {
        assertEquals(OwnRedis.uri("host-is-set"), ConfigProvider.getConfig().getValue("quarkus.redis.hosts", String.class));
    }
}
