package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.quarkus.test.QuarkusUnitTest;

/**
 * A concurrency cap below the partition count would leave some partitions a share of 0: their
 * jobs would never run. Start-up fails naming the property and the partition count.
 */
class MaxInFlightBelowPartitionsFailsStartTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClass(OwnRedis.class))
            .overrideConfigKey("quarkus.redis.hosts", OwnRedis.uri("cap-below-partitions"))
            .overrideConfigKey("delayq.partitions", "4")
            .overrideConfigKey("delayq.topics.partner.max-in-flight", "3")
            .assertException(t -> BuildErrors.assertMessages(t, "delayq.topics.partner.max-in-flight",
                    "must be an integer from 4", "delayq.partitions is 4"));

    @AfterAll
    static void stopRedis() {
        OwnRedis.stop("cap-below-partitions");
    }

    @Test
    void startFailsNamingThePropertyAndThePartitionCount() {
        fail("the application should not have started");
    }
}
