package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * The safety-net poll's pause: the interval +25–75 %, so that a lost wake-up waits at most 1.75
 * intervals and an idle replica's poll costs Redis 1 / 1.5 commands per interval on average (the
 * idle budget: about one command per second per replica, everything counted).
 */
class SafetyNetPollTest {
    @Test
    void pausesBetweenOneAndAQuarterAndOneAndThreeQuartersOfTheInterval() {
        assertEquals(1250, SafetyNetPoll.pauseMs(1000, 0.0));
        assertEquals(1500, SafetyNetPoll.pauseMs(1000, 0.5));
        assertEquals(1749, SafetyNetPoll.pauseMs(1000, 0.999));
        assertEquals(12_500, SafetyNetPoll.pauseMs(10_000, 0.0));
    }
}
