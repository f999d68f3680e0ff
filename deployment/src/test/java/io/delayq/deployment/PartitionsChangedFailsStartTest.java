package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.quarkus.test.QuarkusUnitTest;

/**
 * A store written with 2 partitions per topic, a service started with 1: jobs of partition 1
 * would never be taken. Start-up fails and says what to do.
 */
class PartitionsChangedFailsStartTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClass(OwnRedis.class))
            .overrideConfigKey("quarkus.redis.hosts", OwnRedis.uri("two-partitions", "SET dq:partitions 2"))
            .overrideConfigKey("delayq.partitions", "1")
            .assertException(t -> BuildErrors.assertMessages(t, "delayq.partitions is 1",
                    "was written with 2", "delayq.prefix"));

    @AfterAll
    static void stopRedis() {
        OwnRedis.stop("two-partitions");
    }

    @Test
    void startFailsSayingWhatTheStoreWasWrittenWith() {
        fail("the application should not have started");
    }
}
