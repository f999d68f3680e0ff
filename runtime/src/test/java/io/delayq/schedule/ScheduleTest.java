package io.delayq.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import com.cronutils.model.CronType;
import com.cronutils.model.time.ExecutionTime;

import io.delayq.core.InvalidJobException;
import io.delayq.schedule.Schedule.Fields;
import io.delayq.schedule.Schedule.Source;
import io.quarkus.scheduler.common.runtime.CronParser;

/** Tick arithmetic and the rules a schedule's definition must follow. */
class ScheduleTest {
    private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

    static Schedule cron(String expr, String zone) {
        return Schedule.of("s", expr, null, "t", null, zone, null, Source.API, 0, Fields.JSON);
    }

    static Schedule every(Duration d) {
        return Schedule.of("s", null, d, "t", null, null, null, Source.API, 0, Fields.JSON);
    }

    private static List<Instant> ticks(Schedule s, String from, int n) {
        List<Instant> out = new ArrayList<>();
        long t = Instant.parse(from).toEpochMilli();
        for (int i = 0; i < n; i++) {
            t = s.nextAfter(t);
            out.add(Instant.ofEpochMilli(t));
        }
        return out;
    }

    @Test
    void everyCountsFromTheEpochSoEveryReplicaComputesTheSameTicks() {
        Schedule s = every(Duration.ofMinutes(15));
        assertEquals(List.of(Instant.parse("2026-12-01T10:15:00Z"), Instant.parse("2026-12-01T10:30:00Z")),
                ticks(s, "2026-12-01T10:07:31.123Z", 2));
        assertEquals(Instant.parse("2026-12-01T10:30:00Z").toEpochMilli(),
                s.nextAfter(Instant.parse("2026-12-01T10:15:00Z").toEpochMilli()), "strictly after");
        assertEquals(Instant.parse("2026-12-01T10:15:00Z").toEpochMilli(),
                s.latestAtOrBefore(Instant.parse("2026-12-01T10:15:00Z").toEpochMilli()), "at or before");
        assertEquals(Instant.parse("2026-12-01T10:00:00Z").toEpochMilli(),
                s.latestAtOrBefore(Instant.parse("2026-12-01T10:14:59.999Z").toEpochMilli()));
    }

    @Test
    void cronTicksAreThoseOfQuarkusSchedulersCronUtilsInTheScheduleTimeZone() {
        Schedule s = cron("0 0/20 9-10 ? * MON-FRI", "Europe/Berlin");
        List<Instant> ours = ticks(s, "2026-12-04T09:50:00Z", 6); // a Friday, 10:50 in Berlin
        // The reference: cron-utils driven the way Quarkus Scheduler's cron trigger drives it.
        ExecutionTime et = ExecutionTime.forCron(new CronParser(CronType.QUARTZ).parse("0 0/20 9-10 ? * MON-FRI"));
        List<Instant> reference = new ArrayList<>();
        ZonedDateTime t = Instant.parse("2026-12-04T09:50:00Z").atZone(BERLIN);
        for (int i = 0; i < 6; i++) {
            t = et.nextExecution(t).orElseThrow();
            reference.add(t.toInstant());
        }
        assertEquals(reference, ours);
        assertEquals(Instant.parse("2026-12-07T08:00:00Z"), ours.get(0), "Monday 09:00 in Berlin is next");
        assertEquals(ours.get(2).toEpochMilli(), s.latestAtOrBefore(ours.get(2).toEpochMilli() + 60_000));
        assertEquals(ours.get(2).toEpochMilli(), s.latestAtOrBefore(ours.get(2).toEpochMilli()));
    }

    @Test
    void daylightSavingChangesBehaveAsInQuarkusScheduler() {
        // Autumn: 02:30 happens twice. An hourly expression fires at both, a daily one once.
        assertEquals(List.of("00:30+02:00", "01:30+02:00", "02:30+02:00", "02:30+01:00", "03:30+01:00"),
                local(ticks(cron("0 30 * * * ?", "Europe/Berlin"), "2026-10-24T22:00:00Z", 5)));
        assertEquals(List.of("2026-10-25T02:30+02:00", "2026-10-26T02:30+01:00"),
                localDate(ticks(cron("0 30 2 * * ?", "Europe/Berlin"), "2026-10-24T22:00:00Z", 2)));
        // Spring: 02:30 does not exist on 28 March 2027: the daily tick of that day is skipped,
        // the hourly expression goes from 01:30 to 03:30.
        assertEquals(List.of("2027-03-27T02:30+01:00", "2027-03-29T02:30+02:00"),
                localDate(ticks(cron("0 30 2 * * ?", "Europe/Berlin"), "2027-03-26T22:00:00Z", 2)));
        assertEquals(List.of("00:30+01:00", "01:30+01:00", "03:30+02:00"),
                local(ticks(cron("0 30 * * * ?", "Europe/Berlin"), "2027-03-27T23:00:00Z", 3)));
    }

    private static List<String> local(List<Instant> ticks) {
        return ticks.stream().map(i -> i.atZone(BERLIN).toOffsetDateTime().toOffsetTime().toString()).toList();
    }

    private static List<String> localDate(List<Instant> ticks) {
        return ticks.stream().map(i -> i.atZone(BERLIN).toOffsetDateTime().toString()).toList();
    }

    @Test
    void aCronScheduleWithoutTimeZoneReadsItsExpressionInUtc() {
        assertEquals(List.of(Instant.parse("2026-12-02T02:00:00Z")), ticks(cron("0 0 2 * * ?", null), "2026-12-01T10:00:00Z", 1));
        assertEquals("UTC", cron("0 0 2 * * ?", null).zone().getId(), "shown as users write it");
    }

    @Test
    void badDefinitionsNameTheirField() {
        assertField("cron", () -> Schedule.of("s", null, null, "t", null, null, null, Source.API, 0, Fields.JSON));
        assertField("cron", () -> Schedule.of("s", "0 * * * * ?", Duration.ofSeconds(5), "t", null, null, null,
                Source.API, 0, Fields.JSON));
        assertField("cron", () -> cron("every tuesday", null));
        assertField("cron", () -> cron("0 0 25 * * ?", null));
        assertField("every", () -> every(Duration.ofMillis(500)));
        assertField("timeZone", () -> cron("0 0 2 * * ?", "Mars/Olympus"));
        assertField("timeZone", () -> Schedule.of("s", null, Duration.ofMinutes(1), "t", null, "UTC", null,
                Source.API, 0, Fields.JSON));
        assertField("topic", () -> Schedule.of("s", null, Duration.ofMinutes(1), "Bad Topic", null, null, null,
                Source.API, 0, Fields.JSON));
        assertField("misfire", () -> Schedule.of("s", null, Duration.ofMinutes(1), "t", null, null, "later",
                Source.API, 0, Fields.JSON));
        assertField("name", () -> Schedule.of("a:b", null, Duration.ofMinutes(1), "t", null, null, null,
                Source.API, 0, Fields.JSON));
        InvalidJobException e = assertThrows(InvalidJobException.class, () -> Schedule.of("nightly", "0 0 2 * *", null,
                "t", null, null, null, Source.CONFIG, 0, Fields.config("nightly")));
        assertEquals("delayq.schedules.nightly.cron", e.field());
        assertTrue(e.getMessage().contains("delayq.schedules.nightly.cron"), e.getMessage());
    }

    private static void assertField(String field, org.junit.jupiter.api.function.Executable call) {
        InvalidJobException e = assertThrows(InvalidJobException.class, call);
        assertEquals(field, e.field(), e.getMessage());
    }

    @Test
    void durationsPrintAsTheConfigurationSpellsThem() {
        assertEquals("1s", Schedule.format(Duration.ofSeconds(1)));
        assertEquals("1h30m", Schedule.format(Duration.ofMinutes(90)));
        assertEquals("1d", Schedule.format(Duration.ofDays(1)));
        assertEquals("1500ms", Schedule.format(Duration.ofMillis(1500)));
    }

    @Test
    void startAndEndBoundTheTicksBothWays() {
        Schedule s = every(Duration.ofHours(1)).with(Schedule.Steering.of(null, Instant.parse("2026-12-01T10:30:00Z"),
                Instant.parse("2026-12-01T13:00:00Z"), Fields.JSON));
        long ms = Instant.parse("2026-12-01T08:00:00Z").toEpochMilli();
        assertEquals(List.of(Instant.parse("2026-12-01T11:00:00Z"), Instant.parse("2026-12-01T12:00:00Z"),
                Instant.parse("2026-12-01T13:00:00Z")), ticks(s, "2026-12-01T08:00:00Z", 3), "the end itself is a tick");
        assertEquals(Long.MAX_VALUE, s.nextAfter(Instant.parse("2026-12-01T13:00:00Z").toEpochMilli()), "none after end");
        assertEquals(Long.MIN_VALUE, s.latestAtOrBefore(Instant.parse("2026-12-01T10:59:00Z").toEpochMilli()),
                "none before start");
        assertEquals(Instant.parse("2026-12-01T13:00:00Z").toEpochMilli(),
                s.latestAtOrBefore(Instant.parse("2026-12-02T00:00:00Z").toEpochMilli()), "the last before end");
        Schedule c = cron("0 0 9 * * ?", "Europe/Berlin").with(Schedule.Steering.of(null,
                Instant.parse("2026-12-03T00:00:00Z"), null, Fields.JSON));
        assertEquals(Instant.parse("2026-12-03T08:00:00Z").toEpochMilli(), c.nextAfter(ms));
        assertTrue(!s.sameAs(every(Duration.ofHours(1))), "bounds are part of what a schedule fires");
        assertTrue(!every(Duration.ofHours(1)).withPaused(true).sameAs(every(Duration.ofHours(1))), "so is the pause");
    }

    @Test
    void steeringRulesNameTheirField() {
        InvalidJobException end = assertThrows(InvalidJobException.class, () -> Schedule.Steering.of(null,
                Instant.parse("2026-12-01T10:00:00Z"), Instant.parse("2026-12-01T10:00:00Z"), Fields.JSON));
        assertEquals("end", end.field());
        assertEquals("overlap", assertThrows(InvalidJobException.class,
                () -> Schedule.Steering.of("queue", null, null, Fields.JSON)).field());
        assertEquals("delayq.schedules.x.overlap", assertThrows(InvalidJobException.class,
                () -> Schedule.Steering.of("never", null, null, Fields.config("x"))).field());
        assertEquals(Schedule.Overlap.ALLOW, Schedule.Steering.of(null, null, null, Fields.JSON).overlap());
    }
}
