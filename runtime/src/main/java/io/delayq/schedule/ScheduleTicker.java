package io.delayq.schedule;

import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;

import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import io.delayq.core.NewJob;
import io.delayq.ops.DelayqMetrics;
import io.delayq.store.RedisClock;
import io.delayq.store.RedisReplyException;
import io.delayq.store.ScheduleStore.TickOutcome;
import io.delayq.store.ScheduleStore;
import io.delayq.store.StoreUnavailableException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;

/**
 * Fires the ticks of the recurring schedules, on every replica, with no leader. Each replica
 * computes the same ticks (from Redis time) and, a second ahead of each, enqueues the tick's job
 * due at the tick through the enqueue script with the schedule's tick record: the first replica
 * writes the job and the record together, the others find the record and write nothing. So each
 * tick is one job however many replicas run, across restarts, and its job runs with the usual
 * precision because it waits in its day shard like any other.
 * <p>
 * A tick is missed when no replica enqueued it in time: it is more than {@value #LATE_MS} ms past,
 * or a later tick has passed too (every replica was down, or Redis away). Missed ticks follow the
 * schedule's misfire policy: {@code fire-once} fires the latest of them, once, at once;
 * {@code skip} records it without a job. Ticks before a schedule was defined never count.
 */
@ApplicationScoped
public class ScheduleTicker {
    private static final Logger LOG = Logger.getLogger(ScheduleTicker.class);
    /** How far ahead of its tick a job is enqueued. */
    static final long LEAD_MS = 1000;
    /** A tick enqueued later than this after its time counts as missed. */
    static final long LATE_MS = 5000;
    /** How often the definitions created over REST are re-read from Redis. */
    static final long RELOAD_MS = 5000;
    /**
     * While the safety-net poll reads the schedules' revision (this replica serves topics), the
     * definitions are re-read when it moved, and at least this often: an idle replica's Redis
     * cost is then that poll and little else.
     */
    static final long RELOAD_UNCHANGED_MS = 60_000;
    private static final long RETRY_MS = 1000;

    private final ScheduleStore store;
    private final DelayqMetrics metrics;
    private final MeterRegistry registry;
    private final Supplier<List<Schedule>> schedules;
    private final Runnable reload;
    private final RedisClock clock;
    private final LongSupplier now;
    /** Whether a schedule is still defined as known, checked before each tick is fired. */
    private Predicate<Schedule> stillDefined = s -> true;
    /** Per schedule name; only the ticker's thread (or a test's pass) touches it. */
    private final Map<String, State> states = new HashMap<>();
    private final Object wakeLock = new Object();
    private boolean woken;
    private volatile boolean stopping;
    private boolean clockSampled;
    private Thread thread;

    private static final class State {
        final Schedule schedule;
        /** The last tick this replica knows fired or was skipped (epoch ms). */
        long known;
        boolean loaded;

        State(Schedule schedule) {
            this.schedule = schedule;
        }
    }

    @Inject
    public ScheduleTicker(Schedules schedules, ScheduleStore store, DelayqMetrics metrics, MeterRegistry registry) {
        this(schedules::all, schedules::reload, store, metrics, registry, new RedisClock(), null);
        this.stillDefined = schedules::stillDefined;
        schedules.onChange(this::wake);
    }

    /**
     * A ticker over the given schedules, not started; {@code now} null = Redis time, else an
     * injected clock (tests drive such a ticker with {@link #pass}).
     */
    public ScheduleTicker(Supplier<List<Schedule>> schedules, Runnable reload, ScheduleStore store, DelayqMetrics metrics,
            MeterRegistry registry, RedisClock clock, LongSupplier now) {
        this.schedules = schedules;
        this.reload = reload;
        this.store = store;
        this.metrics = metrics;
        this.registry = registry;
        this.clock = clock;
        this.now = now != null ? now : clock::redisNow;
    }

    void onStart(@Observes StartupEvent event) {
        thread = Thread.ofPlatform().daemon().name("delayq-schedules").start(this::run);
    }

    void onStop(@Observes @Priority(1) ShutdownEvent event) throws InterruptedException {
        stopping = true;
        if (thread != null) {
            thread.interrupt();
            thread.join(TimeUnit.SECONDS.toMillis(5));
        }
    }

    private void wake() {
        synchronized (wakeLock) {
            woken = true;
            wakeLock.notifyAll();
        }
    }

    private void run() {
        long nextReload = 0;
        long reloadedAt = 0;
        String reloadedRevision = null;
        boolean away = false;
        while (!stopping) {
            long waitMs;
            try {
                long mono = System.nanoTime() / 1_000_000;
                if (mono >= nextReload) {
                    String revision = store.recentSchedulesRevision(RELOAD_MS);
                    if (revision == null || !revision.equals(reloadedRevision) || mono - reloadedAt >= RELOAD_UNCHANGED_MS) {
                        reload.run();
                        reloadedRevision = revision;
                        reloadedAt = mono;
                    }
                    nextReload = mono + RELOAD_MS;
                    if (!schedules.get().isEmpty()) {
                        sampleClock();
                    }
                } else if (!clockSampled && !schedules.get().isEmpty()) {
                    sampleClock(); // a first schedule between two re-reads: never on the wall clock
                }
                long t = now.getAsLong();
                long next = pass(t);
                waitMs = Math.min(next == Long.MAX_VALUE ? RELOAD_MS : next - now.getAsLong(),
                        nextReload - System.nanoTime() / 1_000_000);
                if (away) {
                    LOG.info("recurring schedules: Redis answers again, ticks resume");
                    away = false;
                }
            } catch (StoreUnavailableException | RedisReplyException e) {
                if (!away) {
                    LOG.warnf("recurring schedules: cannot reach Redis (%s); retrying every second", e.getMessage());
                    away = true;
                }
                waitMs = RETRY_MS;
            } catch (io.delayq.core.IdTakenException e) {
                // retryable only (ScheduleStore.tick): a tick's id being enqueued elsewhere; tried again
                LOG.infof("recurring schedules: %s; retrying in a second", e.getMessage());
                waitMs = RETRY_MS;
            } catch (RuntimeException e) {
                if (!applicationRunning()) {
                    return; // a start that failed after this thread began (no shutdown event comes)
                }
                LOG.error("recurring schedules: unexpected failure; retrying in a second", e);
                waitMs = RETRY_MS;
            } catch (Error e) {
                LOG.error("recurring schedules: this replica stops firing them (the others go on)", e);
                throw e;
            }
            sleep(Math.max(1, waitMs));
        }
    }

    /** Whether the application this ticker belongs to is still up (its CDI container runs). */
    private static boolean applicationRunning() {
        io.quarkus.arc.ArcContainer container = io.quarkus.arc.Arc.container();
        return container != null && container.isRunning();
    }

    private void sleep(long ms) {
        synchronized (wakeLock) {
            long until = System.nanoTime() + ms * 1_000_000;
            try {
                while (!woken && !stopping) {
                    long left = until - System.nanoTime();
                    if (left <= 0) {
                        break;
                    }
                    TimeUnit.NANOSECONDS.timedWait(wakeLock, left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopping = true;
            }
            woken = false;
        }
    }

    private void sampleClock() {
        long before = clock.monotonicNanos();
        long redisNow = store.redisTimeMs();
        clock.observe(redisNow, before, clock.monotonicNanos());
        clockSampled = true;
    }

    /**
     * One pass over every schedule at Redis time {@code now}: fires (or skips) what is due and
     * returns the time the next pass is needed, {@link Long#MAX_VALUE} for none.
     */
    public long pass(long now) {
        List<Schedule> all = schedules.get();
        Set<String> names = new HashSet<>();
        long wake = Long.MAX_VALUE;
        RuntimeException failed = null;
        for (Schedule s : all) {
            names.add(s.name());
            State st = states.get(s.name());
            if (st == null || !st.schedule.sameAs(s) || st.schedule.since() != s.since()) {
                st = new State(s);
                states.put(s.name(), st);
            }
            try {
                wake = Math.min(wake, advance(st, now));
            } catch (RuntimeException e) {
                // One schedule's failure (Redis away for its partition, say) leaves the others firing.
                failed = failed == null ? e : failed;
                wake = Math.min(wake, now + RETRY_MS);
            }
        }
        states.keySet().retainAll(names);
        if (failed != null) {
            throw failed; // after every schedule had its turn: the loop logs it and passes again
        }
        return wake;
    }

    /** Fires the schedule's ticks due by {@code now} (+ the lead); returns when the next one is. */
    private long advance(State st, long now) {
        Schedule s = st.schedule;
        if (s.paused()) {
            return Long.MAX_VALUE; // fires nothing; a resume is a new definition, with its own state
        }
        if (!st.loaded) {
            long last = store.lastTick(s.name(), s.topic());
            // Never fired and defined in the configuration: its ticks start now, none was missed.
            st.known = last < 0 && s.since() == 0 ? now : Math.max(last, s.since());
            st.loaded = true;
        }
        while (true) {
            long first = s.nextAfter(st.known);
            if (first == Long.MAX_VALUE) {
                return Long.MAX_VALUE;
            }
            if (first > now + LEAD_MS) {
                return first - LEAD_MS;
            }
            if (!stillDefined.test(s)) {
                return now + 100; // changed or deleted meanwhile: the definitions were re-read, pass again
            }
            long latest = s.latestAtOrBefore(now);
            boolean missed = first < now - LATE_MS || latest > first;
            long tick = missed ? latest : first;
            boolean fire = !missed || s.misfire() == Schedule.Misfire.FIRE_ONCE;
            NewJob job = fire ? new NewJob(s.topic(), s.jobId(tick), false, tick, 0, s.payloadJson()) : null;
            long before = clock.monotonicNanos();
            // Overlap skip: every tick in the partition of the name, where the script sees the previous one.
            boolean noOverlap = s.overlap() == Schedule.Overlap.SKIP;
            TickOutcome outcome = store.tick(store.partitionOf(s.topic(), noOverlap ? s.name() : s.jobId(tick)), s.name(),
                    tick, job, noOverlap);
            clock.observe(outcome.redisNowMs(), before, clock.monotonicNanos());
            if (outcome.fired()) {
                recorded(s, first, tick, missed, outcome);
            }
            st.known = tick;
        }
    }

    /** This replica fired (or skipped) the tick: count it, and say so when ticks were missed. */
    private void recorded(Schedule s, long first, long tick, boolean missed, TickOutcome outcome) {
        boolean created = outcome.job() != null && outcome.job().created();
        // Tagged by topic, as every delayq metric (a schedule's name is in its jobs' ids and the log);
        // a REST schedule's topic that this replica neither serves nor configures counts under "other".
        boolean fired = outcome.job() != null;
        if (fired) {
            Counter.builder("delayq.schedule.ticks.fired").description("Ticks of recurring schedules this replica enqueued as jobs")
                    .tag("topic", metrics.tagOf(s.topic())).register(registry).increment();
        } else {
            // Tagged by schedule too: a schedule's name is chosen by its operator (not per job), and
            // "which schedule skips" is the question this counter answers.
            Counter.builder("delayq.schedule.ticks.skipped")
                    .description("Ticks of recurring schedules this replica skipped: missed (misfire=skip), or "
                            + "the previous tick's job still there (overlap=skip)")
                    .tag("topic", metrics.tagOf(s.topic())).tag("schedule", s.name())
                    .tag("reason", outcome.overlapped() ? "overlap" : "misfire").register(registry).increment();
        }
        if (created) {
            metrics.enqueued(s.topic(), 1);
        }
        if (missed && !outcome.overlapped()) {
            LOG.infof("recurring schedule %s missed its ticks from %s to %s (no replica could fire them): %s", s.name(),
                    Instant.ofEpochMilli(first), Instant.ofEpochMilli(tick),
                    outcome.job() != null ? "fired the latest once (misfire=fire-once), job " + s.jobId(tick)
                            : "skipped them (misfire=skip)");
        }
    }
}
