package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;

import org.junit.jupiter.api.Test;

/**
 * {@code delayq.topics.<t>.http.max-retry-after} against {@code delayq.horizon}: a hold is also its
 * job's snooze, and a snooze past the horizon fails the job for good.
 */
class MaxRetryAfterTest {
    private static final Duration YEAR = Duration.ofDays(365);

    @Test
    void aCapSetLongerThanTheHorizonStopsTheStartNamingBothSettings() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> TopicRegistry.maxRetryAfter("slow", Optional.of(Duration.ofHours(2)), Duration.ofHours(1)));
        assertTrue(e.getMessage().startsWith("delayq.topics.slow.http.max-retry-after (PT2H) must not be longer than"
                + " delayq.horizon (PT1H)"), e.getMessage());
    }

    @Test
    void aCapSetWithinTheHorizonIsUsedAsSetTheHorizonItselfIncluded() {
        assertEquals(Duration.ofMinutes(5), TopicRegistry.maxRetryAfter("t", Optional.of(Duration.ofMinutes(5)), YEAR));
        assertEquals(Duration.ofHours(1), TopicRegistry.maxRetryAfter("t", Optional.of(Duration.ofHours(1)),
                Duration.ofHours(1)));
    }

    @Test
    void unsetItIsAnHourOrTheHorizonWhenThatIsShorter() {
        assertEquals(Duration.ofHours(1), TopicRegistry.maxRetryAfter("t", Optional.empty(), YEAR));
        assertEquals(Duration.ofMinutes(10), TopicRegistry.maxRetryAfter("t", Optional.empty(), Duration.ofMinutes(10)));
    }
}
