package io.delayq.schedule;

import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

import com.cronutils.model.CronType;
import com.cronutils.model.time.ExecutionTime;

import io.delayq.core.InvalidJobException;
import io.delayq.core.JobValidator;
import io.quarkus.scheduler.common.runtime.CronParser;

/**
 * One recurring schedule: when its ticks fall ({@code cron} in a time zone, or {@code every}
 * period counted from the epoch), and the job each tick becomes. Immutable; a change is a new
 * instance. Ticks are computed by cron-utils exactly as Quarkus Scheduler computes them, so a
 * daylight-saving change behaves the same: a local time that does not exist that day is
 * skipped, one that happens twice fires twice for an hourly expression and once for a daily one.
 */
public final class Schedule {
    /** A name leaves room for {@code :<epoch ms>} in a job id of at most 128 characters. */
    public static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,100}");
    private static final CronParser CRON = new CronParser(CronType.QUARTZ);
    private static final long MIN_EVERY_MS = 1000;
    /**
     * Far beyond any use (a yearly schedule is a cron), and small enough that no tick arithmetic
     * (epoch ms + period) can overflow: a period of PT9999999999999H is a Duration but no long of ms.
     */
    static final Duration MAX_EVERY = Duration.ofDays(3650);
    /** The default time zone, by its region id ("UTC", as users write it, not the offset's "Z"). */
    private static final ZoneId UTC = ZoneId.of("UTC");

    public enum Source {
        /** {@code delayq.schedules.<name>} of this replica's configuration. */
        CONFIG,
        /** Created over REST, kept in Redis, fired by every replica. */
        API;

        public String json() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public enum Misfire {
        FIRE_ONCE("fire-once"),
        SKIP("skip");

        private final String json;

        Misfire(String json) {
            this.json = json;
        }

        public String json() {
            return json;
        }

        static Misfire of(String field, String value) {
            if (value == null) {
                return FIRE_ONCE;
            }
            for (Misfire m : values()) {
                if (m.json.equals(value)) {
                    return m;
                }
            }
            throw new InvalidJobException(field, field + " must be fire-once or skip, not " + value);
        }
    }

    /** Whether a tick fires while the previous tick's job still exists (scheduled or running). */
    public enum Overlap {
        /** Every tick fires (the default). */
        ALLOW("allow"),
        /**
         * A tick whose previous tick's job is still scheduled or running is skipped (a dead one does
         * not block); all the schedule's ticks go to the partition of its name, so the enqueue
         * script checks the previous job in the step that would write the next.
         */
        SKIP("skip");

        private final String json;

        Overlap(String json) {
            this.json = json;
        }

        public String json() {
            return json;
        }

        static Overlap of(String field, String value) {
            if (value == null) {
                return ALLOW;
            }
            for (Overlap o : values()) {
                if (o.json.equals(value)) {
                    return o;
                }
            }
            throw new InvalidJobException(field, field + " must be allow or skip, not " + value);
        }
    }

    /** How a schedule is steered: its overlap policy, and the instants that bound when it fires. */
    public record Steering(Overlap overlap, Instant start, Instant end) {
        /** Today's behaviour: every tick, unbounded. */
        public static final Steering NONE = new Steering(Overlap.ALLOW, null, null);

        /**
         * Checked steering; {@code overlap} as the API spells it (null = allow).
         *
         * @throws InvalidJobException naming the field at fault (end not after start)
         */
        public static Steering of(String overlap, Instant start, Instant end, Fields fields) {
            Overlap o = Overlap.of(fields.overlap(), overlap);
            if (start != null && end != null && !end.isAfter(start)) {
                throw new InvalidJobException(fields.end(), fields.end() + " must be after " + fields.start() + " (" + start
                        + "), not " + end);
            }
            return new Steering(o, start, end);
        }
    }

    private final String name;
    private final String cron;
    private final Duration every;
    private final String topic;
    private final String payloadJson;
    private final ZoneId zone;
    private final Misfire misfire;
    private final Source source;
    private final long since;
    private final ExecutionTime execution;
    private final Steering steering;
    private final boolean paused;

    private Schedule(String name, String cron, Duration every, String topic, String payloadJson, ZoneId zone,
            Misfire misfire, Source source, long since, ExecutionTime execution, Steering steering, boolean paused) {
        this.name = name;
        this.cron = cron;
        this.every = every;
        this.topic = topic;
        this.payloadJson = payloadJson;
        this.zone = zone;
        this.misfire = misfire;
        this.source = source;
        this.since = since;
        this.execution = execution;
        this.steering = steering;
        this.paused = paused;
    }

    /**
     * A checked schedule; {@code fields} names the fields in messages (REST's JSON names, or the
     * configuration's property names).
     *
     * @param since when it was defined (epoch ms): no tick before it counts as missed; 0 for a
     *        schedule of the configuration (none of its ticks before a replica first sees it does)
     * @throws InvalidJobException naming the field at fault
     */
    public static Schedule of(String name, String cron, Duration every, String topic, String payloadJson,
            String timeZone, String misfire, Source source, long since, Fields fields) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new InvalidJobException(fields.name, fields.name + " must match " + NAME.pattern());
        }
        if ((cron == null) == (every == null)) {
            throw new InvalidJobException(fields.cron, "give either " + fields.cron + " or " + fields.every
                    + (cron == null ? "" : ", not both"));
        }
        ExecutionTime execution = null;
        if (cron != null) {
            try {
                execution = ExecutionTime.forCron(CRON.parse(cron));
            } catch (RuntimeException e) {
                throw new InvalidJobException(fields.cron, fields.cron + " is not a Quartz cron expression ("
                        + "seconds minutes hours day-of-month month day-of-week [year], as 0 0/15 * * * ?): "
                        + e.getMessage());
            }
        } else if (every.compareTo(MAX_EVERY) > 0) {
            throw new InvalidJobException(fields.every, fields.every + " must be at most " + format(MAX_EVERY) + ", not "
                    + every);
        } else if (every.compareTo(Duration.ofMillis(MIN_EVERY_MS)) < 0) {
            throw new InvalidJobException(fields.every, fields.every + " must be at least 1s, not "
                    + (every.compareTo(MAX_EVERY.negated()) < 0 ? every : format(every)));
        }
        JobValidator.checkTopic(fields.topic, topic);
        ZoneId zone = null;
        if (timeZone != null) {
            if (cron == null) {
                throw new InvalidJobException(fields.timeZone, fields.timeZone + " applies to cron schedules only: "
                        + fields.every + " counts from the epoch, in no time zone");
            }
            try {
                zone = ZoneId.of(timeZone);
            } catch (DateTimeException e) {
                throw new InvalidJobException(fields.timeZone, fields.timeZone + " is not a time zone id (as "
                        + "Europe/Berlin or UTC): " + timeZone);
            }
        } else if (cron != null) {
            zone = UTC;
        }
        Misfire m = Misfire.of(fields.misfire, misfire);
        return new Schedule(name, cron, every, topic, payloadJson, zone, m, source, since, execution, Steering.NONE, false);
    }

    /** The same schedule with its overlap policy and bounds (see {@link Steering#of}). */
    public Schedule with(Steering s) {
        return new Schedule(name, cron, every, topic, payloadJson, zone, misfire, source, since, execution, s, paused);
    }

    /** The same schedule, paused (fires nothing) or not. */
    public Schedule withPaused(boolean p) {
        return new Schedule(name, cron, every, topic, payloadJson, zone, misfire, source, since, execution, steering, p);
    }

    /** The names of a schedule's fields in error messages. */
    public record Fields(String name, String cron, String every, String topic, String payload, String timeZone,
            String misfire, String overlap, String start, String end) {
        /** As the REST API spells them. */
        public static final Fields JSON = new Fields("name", "cron", "every", "topic", "payload", "timeZone", "misfire",
                "overlap", "start", "end");

        /** As the configuration of schedule {@code name} spells them. */
        public static Fields config(String name) {
            String p = "delayq.schedules." + (NAME.matcher(name).matches() ? name : "\"" + name + "\"") + ".";
            return new Fields("delayq.schedules.<name>", p + "cron", p + "every", p + "topic", p + "payload",
                    p + "time-zone", p + "misfire", p + "overlap", p + "start", p + "end");
        }
    }

    /**
     * The first tick strictly after {@code ms} (epoch ms) within the schedule's start and end;
     * {@link Long#MAX_VALUE} when none is left.
     */
    public long nextAfter(long ms) {
        long from = steering.start() == null ? ms : Math.max(ms, steering.start().toEpochMilli() - 1);
        long next = unboundedNextAfter(from);
        return steering.end() != null && next > steering.end().toEpochMilli() ? Long.MAX_VALUE : next;
    }

    /** The latest tick at or before {@code ms} within the start and end, {@link Long#MIN_VALUE} when there is none. */
    public long latestAtOrBefore(long ms) {
        long to = steering.end() == null ? ms : Math.min(ms, steering.end().toEpochMilli());
        long at = unboundedLatestAtOrBefore(to);
        return steering.start() != null && at < steering.start().toEpochMilli() ? Long.MIN_VALUE : at;
    }

    private long unboundedNextAfter(long ms) {
        if (every != null) {
            long e = every.toMillis();
            return Math.addExact(Math.floorDiv(ms, e) * e, e);
        }
        // cron-utils counts whole seconds: step on until the answer is past ms itself.
        ZonedDateTime from = zoned(ms);
        for (int i = 0; i < 4; i++) {
            Optional<ZonedDateTime> next = execution.nextExecution(from);
            if (next.isEmpty()) {
                return Long.MAX_VALUE;
            }
            long at = next.get().toInstant().toEpochMilli();
            if (at > ms) {
                return at;
            }
            from = next.get();
        }
        return Long.MAX_VALUE;
    }

    private long unboundedLatestAtOrBefore(long ms) {
        if (every != null) {
            long e = every.toMillis();
            return Math.floorDiv(ms, e) * e;
        }
        Optional<ZonedDateTime> last = execution.lastExecution(zoned(ms + 1));
        if (last.isEmpty()) {
            return Long.MIN_VALUE;
        }
        long at = last.get().toInstant().toEpochMilli();
        while (at > ms) { // never expected; guards the loop below against an answer past ms
            Optional<ZonedDateTime> earlier = execution.lastExecution(zoned(at));
            if (earlier.isEmpty()) {
                return Long.MIN_VALUE;
            }
            at = earlier.get().toInstant().toEpochMilli();
        }
        for (long next = unboundedNextAfter(at); next <= ms; next = unboundedNextAfter(at)) {
            at = next;
        }
        return at;
    }

    private ZonedDateTime zoned(long ms) {
        return Instant.ofEpochMilli(ms).atZone(zone);
    }

    /** The same schedule, defined at {@code sinceMs}: no tick at or before it fires. */
    public Schedule withSince(long sinceMs) {
        return new Schedule(name, cron, every, topic, payloadJson, zone, misfire, source, sinceMs, execution, steering,
                paused);
    }

    /** The id of the job of the tick at {@code tickMs}. */
    public String jobId(long tickMs) {
        return name + ":" + tickMs;
    }

    /** {@code cron '0 0 2 * * ?' in Europe/Berlin} or {@code every 15m}, for logs. */
    public String describe() {
        return cron != null ? "cron '" + cron + "' in " + zone.getId() : "every " + format(every);
    }

    /** True when both fire the same job at the same ticks (the source and time of definition aside). */
    public boolean sameAs(Schedule o) {
        return o != null && name.equals(o.name) && java.util.Objects.equals(cron, o.cron)
                && java.util.Objects.equals(every, o.every) && topic.equals(o.topic)
                && java.util.Objects.equals(payloadJson, o.payloadJson) && java.util.Objects.equals(zone, o.zone)
                && misfire == o.misfire && steering.equals(o.steering) && paused == o.paused;
    }

    /** {@code 90s} as {@code 1m30s}: the way the configuration spells durations. */
    public static String format(Duration d) {
        long ms = d.toMillis();
        if (ms % 1000 != 0) {
            return ms + "ms";
        }
        long s = ms / 1000;
        StringBuilder b = new StringBuilder();
        long[] units = { 86400, 3600, 60, 1 };
        String[] names = { "d", "h", "m", "s" };
        for (int i = 0; i < units.length; i++) {
            if (s >= units[i]) {
                b.append(s / units[i]).append(names[i]);
                s %= units[i];
            }
        }
        return b.length() == 0 ? "0s" : b.toString();
    }

    public String name() {
        return name;
    }

    /** The cron expression, null for an {@code every} schedule. */
    public String cron() {
        return cron;
    }

    /** The period, null for a cron schedule. */
    public Duration every() {
        return every;
    }

    public String topic() {
        return topic;
    }

    /** The payload JSON of each tick's job, null for none. */
    public String payloadJson() {
        return payloadJson;
    }

    /** The time zone of a cron schedule, null for an {@code every} schedule. */
    public ZoneId zone() {
        return zone;
    }

    public Misfire misfire() {
        return misfire;
    }

    public Source source() {
        return source;
    }

    /** Its overlap policy and the instants that bound when it fires. */
    public Steering steering() {
        return steering;
    }

    public Overlap overlap() {
        return steering.overlap();
    }

    /** True while paused: it fires nothing (a resume applies its misfire rule to what it missed). */
    public boolean paused() {
        return paused;
    }

    /** When it was defined, epoch ms; 0 for a schedule of the configuration. */
    public long since() {
        return since;
    }
}
