package io.delayq.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.ops.DelayqMetrics;
import io.delayq.schedule.Schedule.Fields;
import io.delayq.schedule.Schedule.Source;
import io.delayq.store.RedisClock;
import io.delayq.store.ScheduleStore;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

/**
 * The ticker against a real Redis, on an injected clock: replicas are tickers sharing the store,
 * a restart is a new ticker, an outage is the clock jumping while no ticker runs. (Topics with
 * no observer: the tick jobs stay in Redis to be counted.)
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class ScheduleTickerTest {
    @Inject
    ScheduleStore store;
    @Inject
    DelayqMetrics metrics;
    @Inject
    MeterRegistry registry;
    @Inject
    io.delayq.core.Jobs jobsApi;

    private final AtomicLong clock = new AtomicLong();

    private ScheduleTicker replica(Schedule s) {
        return new ScheduleTicker(() -> List.of(s), () -> {
        }, store, metrics, registry, new RedisClock(), clock::get);
    }

    private static Schedule schedule(String name, String topic, String cron, Duration every, String zone, String misfire) {
        return Schedule.of(name, cron, every, topic, "{\"from\":\"" + name + "\"}", zone, misfire, Source.CONFIG, 0,
                Fields.config(name));
    }

    /** The ticks whose jobs exist in the topic, as epoch ms. */
    private static Set<Long> jobs(String topic, String name) {
        try (Resp r = RedisTestResource.resp()) {
            Set<Long> out = new TreeSet<>();
            for (Object id : r.list("HKEYS", Topics.keys(topic) + "jobs")) {
                String s = id.toString();
                assertTrue(s.startsWith(name + ":"), s);
                out.add(Long.parseLong(s.substring(name.length() + 1)));
            }
            return out;
        }
    }

    /** Runs the replicas' passes, each time moving the clock to the earliest wake-up asked, up to {@code until}. */
    private void runUntil(long until, ScheduleTicker... replicas) {
        while (clock.get() < until) {
            long wake = Long.MAX_VALUE;
            for (ScheduleTicker r : replicas) {
                wake = Math.min(wake, r.pass(clock.get()));
            }
            clock.set(Math.max(clock.get() + 1, Math.min(wake, until)));
        }
    }

    private static long ms(String instant) {
        return Instant.parse(instant).toEpochMilli();
    }

    @Test
    void hourlyCronAcrossTheAutumnChangeFiresAtBothHalfPastTwos() {
        String topic = Topics.fresh("dst-autumn");
        Schedule s = schedule("half-past", topic, "0 30 * * * ?", null, "Europe/Berlin", null);
        clock.set(ms("2026-10-24T22:00:00Z"));
        ScheduleTicker a = replica(s);
        ScheduleTicker b = replica(s);
        runUntil(ms("2026-10-25T03:45:00Z"), a, b);
        List<String> local = new ArrayList<>();
        for (long t : jobs(topic, "half-past")) {
            local.add(Instant.ofEpochMilli(t).atZone(ZoneId.of("Europe/Berlin")).toOffsetDateTime().toOffsetTime().toString());
        }
        assertEquals(List.of("00:30+02:00", "01:30+02:00", "02:30+02:00", "02:30+01:00", "03:30+01:00", "04:30+01:00"),
                local, "one job per tick, 02:30 twice (summer time, then winter time)");
    }

    @Test
    void dailyCronAcrossTheSpringChangeSkipsTheDayWithoutItsLocalTime() {
        String topic = Topics.fresh("dst-spring");
        Schedule s = schedule("daily", topic, "0 30 2 * * ?", null, "Europe/Berlin", null);
        clock.set(ms("2027-03-26T12:00:00Z"));
        runUntil(ms("2027-03-29T12:00:00Z"), replica(s), replica(s), replica(s));
        assertEquals(Set.of(ms("2027-03-27T01:30:00Z"), ms("2027-03-29T00:30:00Z")), jobs(topic, "daily"),
                "02:30 of 28 March does not exist in Berlin: no job that day, as in Quarkus Scheduler");
    }

    @Test
    void aRestartedReplicaGoesOnWithoutFiringATickTwice() {
        String topic = Topics.fresh("restart");
        Schedule s = schedule("min", topic, null, Duration.ofMinutes(1), null, null);
        clock.set(ms("2026-12-01T10:00:30Z"));
        runUntil(ms("2026-12-01T10:03:30Z"), replica(s));
        runUntil(ms("2026-12-01T10:05:30Z"), replica(s), replica(s)); // both new: state comes from Redis
        assertEquals(Set.of(ms("2026-12-01T10:01:00Z"), ms("2026-12-01T10:02:00Z"), ms("2026-12-01T10:03:00Z"),
                ms("2026-12-01T10:04:00Z"), ms("2026-12-01T10:05:00Z")), jobs(topic, "min"));
    }

    @Test
    void ticksMissedWhileEveryReplicaWasDownFireOnceWithFireOnce() {
        String topic = Topics.fresh("misfire-once");
        Schedule s = schedule("m", topic, null, Duration.ofMinutes(1), null, "fire-once");
        clock.set(ms("2026-12-01T10:00:30Z"));
        runUntil(ms("2026-12-01T10:02:30Z"), replica(s), replica(s));
        clock.set(ms("2026-12-01T10:06:20Z")); // every replica was down over 10:03, 10:04, 10:05 and 10:06
        runUntil(ms("2026-12-01T10:08:30Z"), replica(s), replica(s));
        assertEquals(Set.of(ms("2026-12-01T10:01:00Z"), ms("2026-12-01T10:02:00Z"), ms("2026-12-01T10:06:00Z"),
                ms("2026-12-01T10:07:00Z"), ms("2026-12-01T10:08:00Z")), jobs(topic, "m"),
                "the latest missed tick (10:06) once, then on schedule");
    }

    @Test
    void ticksMissedWhileEveryReplicaWasDownAreSkippedWithSkip() {
        String topic = Topics.fresh("misfire-skip");
        Schedule s = schedule("k", topic, null, Duration.ofMinutes(1), null, "skip");
        clock.set(ms("2026-12-01T10:00:30Z"));
        runUntil(ms("2026-12-01T10:02:30Z"), replica(s), replica(s));
        clock.set(ms("2026-12-01T10:06:20Z"));
        runUntil(ms("2026-12-01T10:08:30Z"), replica(s), replica(s));
        assertEquals(Set.of(ms("2026-12-01T10:01:00Z"), ms("2026-12-01T10:02:00Z"), ms("2026-12-01T10:07:00Z"),
                ms("2026-12-01T10:08:00Z")), jobs(topic, "k"), "nothing for 10:03 to 10:06, then on schedule");
    }

    @Test
    void aTickFoundMoreThanFiveSecondsLateIsMissed() {
        String topic = Topics.fresh("late");
        Schedule skip = schedule("late", topic, null, Duration.ofHours(1), null, "skip");
        clock.set(ms("2026-12-01T09:59:00Z"));
        ScheduleTicker r = replica(skip);
        r.pass(clock.get());
        r.pass(ms("2026-12-01T10:00:04Z")); // 4 s late: still on time
        r.pass(ms("2026-12-01T11:00:06Z")); // 6 s late: missed, skipped
        r.pass(ms("2026-12-01T11:59:59.500Z")); // the lead: 12:00 is enqueued half a second ahead
        assertEquals(Set.of(ms("2026-12-01T10:00:00Z"), ms("2026-12-01T12:00:00Z")), jobs(topic, "late"));
    }

    @Test
    void withOverlapSkipATickWaitsForNoneWhileThePreviousTicksJobIsThere() {
        String topic = Topics.fresh("overlap");
        Schedule s = schedule("ov", topic, null, Duration.ofMinutes(1), null, null)
                .with(Schedule.Steering.of("skip", null, null, Fields.JSON));
        clock.set(ms("2026-12-01T10:00:30Z"));
        ScheduleTicker a = replica(s);
        ScheduleTicker b = replica(s);
        runUntil(ms("2026-12-01T10:03:30Z"), a, b);
        assertEquals(Set.of(ms("2026-12-01T10:01:00Z")), jobs(topic, "ov"),
                "10:02 and 10:03 skipped: the job of 10:01 is still scheduled (no observer takes it)");
        jobsApi.cancel(topic, "ov:" + ms("2026-12-01T10:01:00Z")); // the previous tick's job is gone
        runUntil(ms("2026-12-01T10:05:30Z"), a, b);
        assertEquals(Set.of(ms("2026-12-01T10:04:00Z")), jobs(topic, "ov"), "10:04 fires, 10:05 waits for it");
        assertEquals(3.0, registry.get("delayq.schedule.ticks.skipped").tag("schedule", "ov").tag("reason", "overlap")
                .counter().count(), "each skipped tick counted once over both replicas");
    }

    @Test
    void startAndEndBoundTheTicks() {
        String topic = Topics.fresh("bounds");
        Schedule s = schedule("b", topic, null, Duration.ofMinutes(1), null, null).with(Schedule.Steering.of(null,
                Instant.parse("2026-12-01T10:01:30Z"), Instant.parse("2026-12-01T10:04:00Z"), Fields.JSON));
        clock.set(ms("2026-12-01T10:00:30Z"));
        runUntil(ms("2026-12-01T10:07:30Z"), replica(s), replica(s));
        assertEquals(Set.of(ms("2026-12-01T10:02:00Z"), ms("2026-12-01T10:03:00Z"), ms("2026-12-01T10:04:00Z")),
                jobs(topic, "b"), "the first tick at or after start, the last at or before end");
    }

    @Test
    void aPausedScheduleFiresNothingAndItsResumeAppliesTheMisfireRule() {
        String topic = Topics.fresh("paused");
        Schedule s = schedule("p", topic, null, Duration.ofMinutes(1), null, "fire-once");
        clock.set(ms("2026-12-01T10:00:30Z"));
        runUntil(ms("2026-12-01T10:01:30Z"), replica(s), replica(s));
        runUntil(ms("2026-12-01T10:05:20Z"), replica(s.withPaused(true)), replica(s.withPaused(true)));
        assertEquals(Set.of(ms("2026-12-01T10:01:00Z")), jobs(topic, "p"), "nothing while paused");
        runUntil(ms("2026-12-01T10:06:30Z"), replica(s), replica(s));
        assertEquals(Set.of(ms("2026-12-01T10:01:00Z"), ms("2026-12-01T10:05:00Z"), ms("2026-12-01T10:06:00Z")),
                jobs(topic, "p"), "resumed: the latest missed tick (10:05) once, then on schedule");
    }
}
