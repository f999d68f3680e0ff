package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.quarkus.test.QuarkusUnitTest;

/** A heartbeat that is not shorter than the lease would let leases expire under running jobs. */
class HeartbeatNotBelowLeaseFailsStartTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withEmptyApplication()
            .overrideConfigKey("delayq.dispatch.lease", "5s")
            .overrideConfigKey("delayq.dispatch.heartbeat", "5s")
            .assertException(t -> BuildErrors.assertMessages(t, "delayq.dispatch.heartbeat (PT5S) must be shorter than",
                    "delayq.dispatch.lease (PT5S)"));

    @Test
    void startFailsNamingBothSettings() {
        fail("the application should not have started");
    }
}
