package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.quarkus.test.QuarkusUnitTest;

/**
 * A target's Retry-After held longer than the horizon would snooze its job past the horizon, which
 * fails the job for good: a cap set longer than the horizon stops the start, naming both settings.
 */
class MaxRetryAfterBeyondHorizonFailsStartTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withEmptyApplication()
            .overrideConfigKey("delayq.horizon", "1h")
            .overrideConfigKey("delayq.topics.slow-target.http.url", "http://127.0.0.1:9/jobs")
            .overrideConfigKey("delayq.topics.slow-target.http.max-retry-after", "2h")
            .assertException(t -> BuildErrors.assertMessages(t,
                    "delayq.topics.slow-target.http.max-retry-after (PT2H) must not be longer than delayq.horizon (PT1H)"));

    @Test
    void startFailsNamingBothSettings() {
        fail("the application should not have started");
    }
}
