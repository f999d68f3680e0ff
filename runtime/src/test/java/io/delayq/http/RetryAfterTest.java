package io.delayq.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

/**
 * How an HTTP target's {@code Retry-After} (and {@code X-Delayq-Snooze}, the same syntax) is read,
 * and the cap {@code http.max-retry-after} puts on it.
 */
class RetryAfterTest {
    private static final Duration HOUR = Duration.ofHours(1);
    private static final Instant NOW = Instant.parse("2026-12-02T08:00:00Z");

    @Test
    void delaySecondsAreADelay() {
        assertEquals(new HttpTargetHandler.When(Duration.ofSeconds(2), null), HttpTargetHandler.When.parse("2"));
        assertEquals(new HttpTargetHandler.When(Duration.ZERO, null), HttpTargetHandler.When.parse("0"));
    }

    @Test
    void anHttpDateIsATime() {
        assertEquals(new HttpTargetHandler.When(null, Instant.parse("2026-12-02T08:00:30Z")),
                HttpTargetHandler.When.parse("Wed, 02 Dec 2026 08:00:30 GMT"));
    }

    @Test
    void anythingElseReadsAsNothing() {
        // The caller then treats the 429/503 as an ordinary failure.
        for (String garbage : new String[] { "", "soon", "-5", "2.5", "1 2", "Wed, 32 Dec 2026 08:00:30 GMT",
                "2026-12-02T08:00:30Z" }) {
            assertNull(HttpTargetHandler.When.parse(garbage), garbage);
        }
    }

    @Test
    void aDelayPastTheCapIsCutToIt() {
        HttpTargetHandler.When year = HttpTargetHandler.When.parse("31536000");
        assertEquals(new HttpTargetHandler.When(HOUR, null), year.cappedAt(HOUR, NOW));
        HttpTargetHandler.When ten = HttpTargetHandler.When.parse("10");
        assertEquals(ten, ten.cappedAt(HOUR, NOW), "within the cap: as asked");
        // More digits than a long holds: still a (capped) delay, not an overflow.
        assertEquals(new HttpTargetHandler.When(HOUR, null),
                HttpTargetHandler.When.parse("99999999999999999999999").cappedAt(HOUR, NOW));
    }

    @Test
    void aDatePastTheCapIsCutToNowPlusTheCap() {
        HttpTargetHandler.When nextYear = HttpTargetHandler.When.parse("Thu, 02 Dec 2027 08:00:00 GMT");
        assertEquals(new HttpTargetHandler.When(null, NOW.plus(HOUR)), nextYear.cappedAt(HOUR, NOW));
        HttpTargetHandler.When soon = HttpTargetHandler.When.parse("Wed, 02 Dec 2026 08:10:00 GMT");
        assertEquals(soon, soon.cappedAt(HOUR, NOW), "within the cap: as asked");
    }
}
