package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.dev.RedisProcess;
import io.quarkus.test.QuarkusUnitTest;

/**
 * A store written with 2 partitions per topic, a service started with 1: jobs of partition 1
 * would never be taken. Start-up fails and says what to do.
 */
class PartitionsChangedFailsStartTest {
    private static final String URI = "dqtest.partitions-redis.uri";
    private static final String PID = "dqtest.partitions-redis.pid";

    /** Loaded twice (JUnit's and the application's class loader): one Redis, found again. */
    static synchronized String redisWrittenWithTwoPartitions() {
        if (System.getProperty(URI) == null) {
            RedisProcess redis = RedisProcess.startEphemeral();
            try (java.net.Socket s = new java.net.Socket("127.0.0.1", redis.port())) {
                s.getOutputStream().write("SET dq:partitions 2\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                s.getInputStream().read(new byte[5]);
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
            System.setProperty(URI, redis.uri());
            System.setProperty(PID, Long.toString(redis.pid()));
        }
        return System.getProperty(URI);
    }

    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withEmptyApplication()
            .overrideConfigKey("quarkus.redis.hosts", redisWrittenWithTwoPartitions())
            .overrideConfigKey("delayq.partitions", "1")
            .assertException(t -> BuildErrors.assertMessages(t, "delayq.partitions is 1",
                    "was written with 2", "delayq.prefix"));

    @AfterAll
    static void stopRedis() {
        String pid = System.getProperty(PID);
        if (pid != null) {
            ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroy);
        }
    }

    @Test
    void startFailsSayingWhatTheStoreWasWrittenWith() {
        fail("the application should not have started");
    }
}
