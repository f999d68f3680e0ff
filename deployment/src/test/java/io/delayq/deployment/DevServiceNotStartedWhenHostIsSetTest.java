package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.dev.RedisProcess;
import io.quarkus.test.QuarkusUnitTest;

/** A configured {@code quarkus.redis.hosts} wins: the Dev Service starts nothing. */
class DevServiceNotStartedWhenHostIsSetTest {
    /*
     * This class is loaded twice (by JUnit and by the test application's class loader), so the
     * Redis it owns is started once and found again through system properties.
     */
    private static final String URI = "dqtest.own-redis.uri";
    private static final String PID = "dqtest.own-redis.pid";

    static synchronized String ownRedis() {
        if (System.getProperty(URI) == null) {
            RedisProcess redis = RedisProcess.startEphemeral();
            System.setProperty(URI, redis.uri());
            System.setProperty(PID, Long.toString(redis.pid()));
        }
        return System.getProperty(URI);
    }

    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withEmptyApplication()
            .overrideConfigKey("quarkus.redis.hosts", ownRedis())
            .setLogRecordPredicate(r -> r.getLoggerName().startsWith("io.delayq"))
            .assertLogRecords(records -> assertTrue(
                    records.stream().noneMatch(r -> r.getMessage().startsWith("delayq Dev Service: redis-server")),
                    "the Dev Service must not start"));

    @AfterAll
    static void stopOwnRedis() {
        String pid = System.getProperty(PID);
        if (pid != null) {
            ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroy);
        }
    }

    @Test
    void theConfiguredRedisIsUsed() {
        assertEquals(ownRedis(), ConfigProvider.getConfig().getValue("quarkus.redis.hosts", String.class));
    }
}
