package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.quarkus.test.QuarkusUnitTest;

/**
 * {@code delayq.devservices.enabled=false} and no Redis configured: nothing is started, and the
 * application does not start either, saying which setting is missing.
 */
class DevServiceDisabledTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withEmptyApplication()
            .overrideConfigKey("delayq.devservices.enabled", "false")
            .assertException(t -> {
                StringBuilder all = new StringBuilder();
                for (Throwable c = t; c != null; c = c.getCause()) {
                    all.append(c.getMessage()).append('\n');
                }
                assertTrue(all.toString().contains("quarkus.redis.hosts"), all.toString());
            });

    @Test
    void startFailsNamingTheMissingSetting() {
        fail("the application should not have started without a Redis");
    }
}
