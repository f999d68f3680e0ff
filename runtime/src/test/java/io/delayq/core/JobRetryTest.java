package io.delayq.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** How a job's own initial and max delay combine with its topic's. */
class JobRetryTest {
    @Test
    void bothGivenReplaceTheTopicsBounds() {
        assertArrayEquals(new long[] { 200, 400 }, new JobRetry(200L, 400L).applyTo(1000, 600_000));
    }

    @Test
    void anInitialDelayAloneKeepsTheTopicsMaxUnlessItIsAbove() {
        assertArrayEquals(new long[] { 200, 600_000 }, new JobRetry(200L, null).applyTo(1000, 600_000));
        assertArrayEquals(new long[] { 60_000, 60_000 }, new JobRetry(60_000L, null).applyTo(1000, 30_000));
    }

    @Test
    void aMaxAloneKeepsTheTopicsInitialDelayUnlessItIsAbove() {
        assertArrayEquals(new long[] { 1000, 5000 }, new JobRetry(null, 5000L).applyTo(1000, 600_000));
        assertArrayEquals(new long[] { 500, 500 }, new JobRetry(null, 500L).applyTo(1000, 600_000));
    }

    @Test
    void neitherGivenIsNoOverride() {
        assertNull(JobRetry.of(null, null));
    }
}
