package io.delayq.schedule;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.HashSet;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.DelayqConfig;
import io.delayq.core.InvalidJobException;
import io.delayq.core.JobInfo;
import io.delayq.core.JobValidator;
import io.delayq.core.Jobs;
import io.delayq.core.NewJob;
import io.delayq.ops.DelayqMetrics;
import io.delayq.schedule.Schedule.Fields;
import io.delayq.schedule.Schedule.Source;
import io.delayq.store.ScheduleStore;
import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * The recurring schedules this replica fires: those of its configuration
 * ({@code delayq.schedules.<name>}, checked at start-up) and those created over REST (kept in
 * Redis, re-read every few seconds and after every change made here). A name declared in the
 * configuration belongs to it: REST may trigger it but not change or delete it, and a definition
 * of the same name in Redis is ignored by the replicas that declare it.
 */
@ApplicationScoped
public class Schedules {
    private static final Logger LOG = Logger.getLogger(Schedules.class);
    private final ScheduleStore store;
    private final JobValidator validator;
    private final Jobs jobs;
    private final ObjectMapper mapper;
    private final DelayqMetrics metrics;
    private final int maxPayloadBytes;
    private final Map<String, Schedule> configured = new TreeMap<>();
    /** The definitions read from Redis last, by name (config names included: they are ignored). */
    private volatile Map<String, Schedule> stored = Map.of();
    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
    /** Definitions in Redis this release cannot read (warned about once each). */
    private volatile Set<String> unreadable = Set.of();

    public Schedules(DelayqConfig config, ScheduleStore store, JobValidator validator, Jobs jobs, ObjectMapper mapper,
            DelayqMetrics metrics) {
        this.store = store;
        this.metrics = metrics;
        this.validator = validator;
        this.jobs = jobs;
        this.mapper = mapper;
        this.maxPayloadBytes = config.api().maxPayloadBytes();
        config.schedules().forEach((name, c) -> {
            Fields fields = Fields.config(name);
            try {
                String payload = c.payload().filter(p -> !p.isBlank()).orElse(null);
                checkPayload(payload, fields.payload());
                configured.put(name, Schedule.of(name, c.cron().orElse(null), c.every().orElse(null), c.topic(),
                        payload, c.timeZone().orElse(null), c.misfire(), Source.CONFIG, 0, fields)
                        .with(Schedule.Steering.of(c.overlap(), instant(c.start(), fields.start()),
                                instant(c.end(), fields.end()), fields)));
            } catch (InvalidJobException e) {
                throw new IllegalStateException("recurring schedule " + name + ": " + e.getMessage(), e);
            }
        });
    }

    private static Instant instant(Optional<String> text, String field) {
        try {
            return text.map(Instant::parse).orElse(null);
        } catch (java.time.format.DateTimeParseException e) {
            throw new InvalidJobException(field, field + " must be an instant such as 2027-01-01T00:00:00Z, not "
                    + text.get());
        }
    }

    /** A payload is JSON and within the payload limit, as a job's. */
    public void checkPayload(String payload, String field) {
        if (payload == null) {
            return;
        }
        try {
            mapper.readTree(payload);
        } catch (JsonProcessingException e) {
            throw new InvalidJobException(field, field + " is not JSON: " + e.getOriginalMessage());
        }
        int size = payload.getBytes(StandardCharsets.UTF_8).length;
        if (size > maxPayloadBytes) {
            throw new InvalidJobException(field, field + " is " + size + " bytes, more than the limit of "
                    + maxPayloadBytes, 413);
        }
    }

    /** A schedule's latest tick fired or skipped, and its next one; null for none. */
    public record Ticks(Instant last, Instant next) {
    }

    /** Its last tick from the records in Redis, and the next one after it (or after now). */
    public Ticks ticks(Schedule s) {
        long last = store.lastTick(s.name(), s.topic());
        long next = s.nextAfter(Math.max(System.currentTimeMillis(), last));
        return new Ticks(last < 0 ? null : Instant.ofEpochMilli(last), next == Long.MAX_VALUE ? null : Instant.ofEpochMilli(next));
    }

    /** Called after the set of schedules changed (the ticker wakes up). */
    void onChange(Runnable listener) {
        listeners.add(listener);
    }

    /** Every schedule this replica fires, by name. */
    public List<Schedule> all() {
        Map<String, Schedule> all = new TreeMap<>(stored);
        all.putAll(configured);
        return new ArrayList<>(all.values());
    }

    /** The configuration's schedules. */
    public Collection<Schedule> configured() {
        return configured.values();
    }

    public Optional<Schedule> find(String name) {
        Schedule s = configured.get(name);
        return s != null ? Optional.of(s) : Optional.ofNullable(stored.get(name));
    }

    /** Re-reads the REST-created definitions from Redis (one reader at a time: no older read wins). */
    public synchronized void reload() {
        Map<String, Schedule> read = new HashMap<>();
        Set<String> bad = new HashSet<>();
        store.scheduleDefinitions().forEach((name, json) -> {
            try {
                read.put(name, decode(name, json));
            } catch (RuntimeException e) {
                bad.add(name + "=" + json);
                if (!unreadable.contains(name + "=" + json)) {
                    LOG.warnf("recurring schedule %s in Redis is unreadable and not fired: %s", name, e.getMessage());
                }
            }
        });
        unreadable = bad;
        for (String name : read.keySet()) {
            if (configured.containsKey(name) && !stored.containsKey(name)) {
                LOG.warnf("recurring schedule %s is both in this replica's configuration and in Redis (created over "
                        + "REST by a replica without it): this replica fires its configuration's", name);
            }
        }
        stored = Map.copyOf(read);
    }

    /**
     * Creates or replaces a schedule over REST; true when it is new. Its definition time is now
     * (Redis time): no tick before it counts as missed. A tick the old definition already
     * enqueued (up to a second ahead) runs as it was; the new one does not enqueue it again.
     * Moved to another topic, the schedule is fenced off the old topic for {@value #FENCE_MS} ms
     * (a replica that has not seen the change cannot fire it there) and fires in the new topic
     * from then on.
     *
     * @throws ConfiguredScheduleException when the name belongs to this replica's configuration
     */
    public synchronized boolean put(Schedule schedule) {
        if (configured.containsKey(schedule.name())) {
            throw new ConfiguredScheduleException(schedule.name());
        }
        for (int attempt = 1;; attempt++) {
            long now = store.redisTimeMs();
            String read = store.scheduleDefinition(schedule.name());
            Schedule before = decodeOrNull(schedule.name(), read);
            // A change keeps the pause: only resume ends it.
            Schedule defined = schedule.withSince(now).withPaused(before != null && before.paused());
            // A new topic, or a new overlap policy (skip puts every tick in the partition of the name,
            // allow in that of its job): the old definition's ticks land elsewhere, so fence them off.
            if (before != null && (!before.topic().equals(schedule.topic()) || before.overlap() != schedule.overlap())) {
                store.fenceTicks(schedule.name(), before.topic(), now + FENCE_MS);
                defined = defined.withSince(now + FENCE_MS);
            }
            Optional<Boolean> created = store.putScheduleIf(schedule.name(), read, encode(defined));
            if (created.isPresent()) {
                changed();
                return created.get();
            }
            giveUpAfter(attempt, schedule.name());
        }
    }

    /** How often a write whose read another replica made stale is redone before it gives up. */
    private static final int MAX_WRITES = 20;

    /**
     * A read-modify-write of a definition found it changed meanwhile by another replica (see
     * {@link ScheduleStore#putScheduleIf}): it is redone on what is there now, up to
     * {@value #MAX_WRITES} times; more means replicas change the schedule without pause.
     */
    private static void giveUpAfter(int attempt, String name) {
        if (attempt >= MAX_WRITES) {
            throw new IllegalStateException("recurring schedule " + name + " changed by other replicas " + attempt
                    + " times while this one tried to write it");
        }
    }

    /** How long a deleted or moved schedule stays fenced off its topic: its lead and lateness, with room. */
    static final long FENCE_MS = ScheduleTicker.LEAD_MS + ScheduleTicker.LATE_MS;

    /**
     * Deletes a REST-created schedule; false when there is none of that name. Its topic is
     * fenced for {@value #FENCE_MS} ms, and the job of a tick already enqueued ahead is cancelled:
     * nothing of it runs after the deletion (a job already due or running goes on).
     */
    public synchronized boolean delete(String name) {
        if (configured.containsKey(name)) {
            throw new ConfiguredScheduleException(name);
        }
        Schedule s = storedNow(name);
        if (s == null) {
            return false;
        }
        store.deleteSchedule(name);
        stopTicks(s, true);
        changed();
        return true;
    }

    /**
     * Fences a schedule that stops firing (deleted, or paused) off its topic for {@value #FENCE_MS}
     * ms and cancels the job of a tick already enqueued ahead: nothing of it runs after this call (a
     * job already due or running goes on). A deleted one's partitions forget its last tick's job.
     */
    private void stopTicks(Schedule s, boolean deleted) {
        long now = store.redisTimeMs();
        store.fenceTicks(s.name(), s.topic(), now + FENCE_MS, deleted);
        long next = s.nextAfter(now);
        for (int i = 0; i < 3 && next <= now + ScheduleTicker.LEAD_MS; i++) {
            jobs.cancel(s.topic(), s.jobId(next));
            next = s.nextAfter(next);
        }
    }

    /**
     * Pauses or resumes a schedule made over REST; empty when there is none of that name, else
     * the schedule as it is now. Paused, it fires nothing on any replica (the state is its
     * definition's, in Redis): the tick records are fenced and a tick enqueued ahead is cancelled,
     * as for a deletion. Resumed, the ticks it missed meanwhile follow its misfire rule (its
     * definition time is kept, so they count as missed). Pausing a paused schedule, or resuming
     * a running one, changes nothing.
     *
     * @throws ConfiguredScheduleException for a schedule of this replica's configuration
     */
    public synchronized Optional<Schedule> setPaused(String name, boolean paused) {
        if (configured.containsKey(name)) {
            throw new ConfiguredScheduleException(name);
        }
        for (int attempt = 1;; attempt++) {
            String read = store.scheduleDefinition(name);
            Schedule s = decodeOrNull(name, read);
            if (s == null) {
                return Optional.empty();
            }
            if (s.paused() == paused) {
                return Optional.of(s);
            }
            Schedule changed = s.withPaused(paused);
            if (store.putScheduleIf(name, read, encode(changed)).isPresent()) {
                if (paused) {
                    stopTicks(s, false);
                }
                changed();
                return Optional.of(changed);
            }
            giveUpAfter(attempt, name);
        }
    }

    /** The most ticks one backfill enqueues. */
    public static final int MAX_BACKFILL = 1000;

    /** What a backfill did: jobs enqueued, and ticks skipped (their job exists, or ran within the dedup window). */
    public record Backfill(int enqueued, int skipped) {
    }

    /**
     * Enqueues one job per tick of {@code s} in [{@code from}, {@code to}], each with its tick's
     * ordinary id, due now: past ticks too (the ticker's guard that refuses them is not asked). A
     * tick whose job still exists, or is remembered by the topic's dedup window, is skipped, so a
     * backfill repeated meanwhile enqueues nothing new. Paused or not, the schedule's tick records
     * are first raised to the last tick of the range (fence.lua), so the ticker never fires one of
     * them again: a backfilled job that ran and was acked leaves no job behind to stop a second run
     * (a resume's fire-once misfire rule would fire the range's last tick again). A future tick is
     * the ticker's: {@code to} after now is refused.
     *
     * @throws InvalidJobException naming {@code to} when it is before {@code from} or after now, or
     *         when the range holds more than {@value #MAX_BACKFILL} ticks (nothing written)
     */
    public Backfill backfill(Schedule s, Instant from, Instant to) {
        if (to.isBefore(from)) {
            throw new InvalidJobException("to", "to must not be before from (" + from + "), not " + to);
        }
        long now = store.redisTimeMs();
        if (to.toEpochMilli() > now) {
            throw new InvalidJobException("to", "a backfill fills past ticks: to must not be after now ("
                    + Instant.ofEpochMilli(now) + "), not " + to + "; the schedule fires its future ticks itself");
        }
        List<Long> ticks = new ArrayList<>();
        for (long t = s.nextAfter(from.toEpochMilli() - 1); t <= to.toEpochMilli(); t = s.nextAfter(t)) {
            if (ticks.size() == MAX_BACKFILL) {
                throw new InvalidJobException("to", "from " + from + " to " + to + " holds more than " + MAX_BACKFILL
                        + " ticks of schedule " + s.name() + ": backfill at most " + MAX_BACKFILL + " at a time");
            }
            ticks.add(t);
        }
        if (ticks.isEmpty()) {
            return new Backfill(0, 0);
        }
        store.fenceTicks(s.name(), s.topic(), ticks.get(ticks.size() - 1));
        List<NewJob> due = ticks.stream().map(t -> new NewJob(s.topic(), s.jobId(t), true, 0, 0, s.payloadJson())).toList();
        int created = store.backfill(s.topic(), s.overlap() == Schedule.Overlap.SKIP ? s.name() : null, due);
        if (created > 0) {
            metrics.enqueued(s.topic(), created);
        }
        return new Backfill(created, ticks.size() - created);
    }

    /** The definition in Redis now, null when none (or unreadable). */
    private Schedule storedNow(String name) {
        return decodeOrNull(name, store.scheduleDefinition(name));
    }

    /** A definition read from Redis, null when none (or unreadable). */
    private Schedule decodeOrNull(String name, String json) {
        try {
            return json == null ? null : decode(name, json);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * Runs a schedule now, once, besides its ticks: a job of its topic with its payload, id
     * {@code <name>:trigger:<now epoch ms>} (Redis time), due at once. Empty when there is no such
     * schedule.
     */
    public Optional<JobInfo> trigger(String name) {
        Optional<Schedule> s = find(name);
        if (s.isEmpty()) {
            reload();
            s = find(name);
        }
        return s.map(schedule -> {
            NewJob job = validator.validate(schedule.topic(), name + ":trigger:" + store.redisTimeMs(), 0L, null, null,
                    schedule.payloadJson());
            return jobs.scheduleAll(List.of(job)).get(0);
        });
    }

    /**
     * True while a schedule made over REST is still defined in Redis as this replica knows it: a
     * replica checks before it fires a tick, so a change or a deletion made through another
     * replica stops the old definition's ticks at once, not at the next re-read.
     */
    public boolean stillDefined(Schedule s) {
        if (s.source() != Source.API) {
            return true;
        }
        String json = store.scheduleDefinition(s.name());
        try {
            if (json != null) {
                Schedule now = decode(s.name(), json);
                if (now.sameAs(s) && now.since() == s.since()) {
                    return true;
                }
            }
        } catch (RuntimeException e) {
            // unreadable now: not as known, so not fired
        }
        reload();
        return false;
    }

    private void changed() {
        reload();
        listeners.forEach(Runnable::run);
    }

    /** How a REST-created schedule is kept in Redis. */
    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Stored(String cron, String every, String topic, String payload, String timeZone, String misfire, long since,
            String overlap, String start, String end, Boolean paused) {
    }

    String encode(Schedule s) {
        try {
            return mapper.writeValueAsString(new Stored(s.cron(), s.every() == null ? null : s.every().toString(),
                    s.topic(), s.payloadJson(), s.cron() == null ? null : s.zone().getId(), s.misfire().json(), s.since(),
                    // Absent when unset: a definition that steers nothing reads the same to an older release.
                    s.overlap() == Schedule.Overlap.ALLOW ? null : s.overlap().json(),
                    s.steering().start() == null ? null : s.steering().start().toString(),
                    s.steering().end() == null ? null : s.steering().end().toString(), s.paused() ? Boolean.TRUE : null));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private Schedule decode(String name, String json) {
        Stored d;
        try {
            d = mapper.readValue(json, Stored.class);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(e.getOriginalMessage(), e);
        }
        return Schedule.of(name, d.cron(), d.every() == null ? null : Duration.parse(d.every()), d.topic(), d.payload(),
                d.timeZone(), d.misfire(), Source.API, d.since(), Fields.JSON)
                .with(Schedule.Steering.of(d.overlap(), d.start() == null ? null : Instant.parse(d.start()),
                        d.end() == null ? null : Instant.parse(d.end()), Fields.JSON))
                .withPaused(Boolean.TRUE.equals(d.paused()));
    }

    /** A REST change to a schedule that this replica's configuration declares. */
    public static final class ConfiguredScheduleException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ConfiguredScheduleException(String name) {
            super("schedule " + name + " is declared in the configuration (delayq.schedules." + name
                    + "): change or remove it there");
        }
    }
}
