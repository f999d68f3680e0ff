package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/**
 * Redis time is followed on the host's monotonic clock: a step of the wall clock (NTP, a VM
 * resumed) changes nothing, so takes are neither delayed nor hurried by it.
 */
class RedisClockTest {

    @Test
    void redisTimeAdvancesWithTheMonotonicClockFromTheBestSample() {
        AtomicLong nanos = new AtomicLong(1_000_000_000L);
        RedisClock clock = new RedisClock(nanos::get);
        // A take answered "Redis now = 5000 ms" between t=1000 ms and t=1002 ms (monotonic).
        clock.observe(5_000, 1_000_000_000L, 1_002_000_000L);
        nanos.set(1_101_000_000L); // 100 ms after the middle of that call
        assertEquals(5_100, clock.redisNow());
    }

    @Test
    void aSlowerSampleDoesNotReplaceABetterOneUntilItIsOld() {
        AtomicLong nanos = new AtomicLong(0);
        RedisClock clock = new RedisClock(nanos::get);
        clock.observe(10_000, 0, 2_000_000);            // rtt 2 ms, middle t=1 ms
        clock.observe(10_900, 10_000_000, 60_000_000);  // rtt 50 ms: worse, ignored
        nanos.set(101_000_000);
        assertEquals(10_100, clock.redisNow());
        clock.observe(20_000, 7_000_000_000L, 7_050_000_000L); // 7 s later: refreshed even though slower
        nanos.set(7_125_000_000L);
        assertEquals(20_100, clock.redisNow());
    }

    @Test
    void aBackwardStepOfTheWallClockDoesNotMoveRedisTime() {
        AtomicLong nanos = new AtomicLong(0);
        RedisClock clock = new RedisClock(nanos::get);
        clock.observe(50_000, 0, 0);
        // The wall clock may jump an hour back here: nothing this clock reads.
        nanos.set(250_000_000);
        assertEquals(50_250, clock.redisNow(), "250 ms later by the monotonic clock, whatever the wall clock says");
    }
}
