package io.delayq.ops;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * The job counters and timers, tagged by topic only (never a job id: one series per topic).
 * Prometheus names: {@code delayq_jobs_enqueued_total}, {@code delayq_job_lateness_seconds}, ...
 * Only the topics this replica serves or configures ({@link LocalTopics}) have series of their
 * own; jobs of any other topic (enqueued here for a replica elsewhere) count under
 * {@code topic="other"}, so that a stream of new topic names does not grow the registry.
 */
@ApplicationScoped
public class DelayqMetrics {
    private final MeterRegistry registry;
    private final LocalTopics local;
    private final Map<String, TopicMeters> byTopic = new ConcurrentHashMap<>();
    private final Function<String, TopicMeters> create;

    public DelayqMetrics(MeterRegistry registry, LocalTopics local) {
        this.registry = registry;
        this.local = local;
        this.create = TopicMeters::new;
    }

    private TopicMeters of(String topic) {
        String tag = local.tagOf(topic);
        TopicMeters m = byTopic.get(tag);
        return m != null ? m : byTopic.computeIfAbsent(tag, create);
    }

    /** The topic tag of a meter of the topic's jobs: the topic itself when local, else {@link LocalTopics#OTHER}. */
    public String tagOf(String topic) {
        return local.tagOf(topic);
    }

    public void enqueued(String topic, int n) {
        if (n > 0) {
            of(topic).enqueued.increment(n);
        }
    }

    /** Jobs sent to the dead set because their expiresAt passed before they could start or run again. */
    public void expired(String topic, int n) {
        if (n > 0) {
            of(topic).expired.increment(n);
        }
    }

    /** Dead jobs removed from the topic's dead set by its retention. */
    public void deadTrimmed(String topic, int n) {
        if (n > 0) {
            of(topic).deadTrimmed.increment(n);
        }
    }

    /** A succeeded job's result not kept whole (larger than the payload limit, or not JSON): dropped, or an HTTP body cut. */
    public void resultDropped(String topic) {
        of(topic).resultsDropped.increment();
    }

    /** A job handed to its observer {@code latenessMs} after its runAt (by Redis clock). */
    public void dispatched(String topic, long latenessMs) {
        TopicMeters m = of(topic);
        m.dispatched.increment();
        m.lateness.record(Duration.ofMillis(Math.max(0, latenessMs)));
    }

    /** One take script call of a taker (its round trip), whatever it returned. */
    public void took(String topic, long nanos) {
        of(topic).take.record(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    /** The take-call timer of a topic (the benchmark reads its percentiles). */
    public Timer takeTimer(String topic) {
        return of(topic).take;
    }

    public void succeeded(String topic, long durationNanos) {
        TopicMeters m = of(topic);
        m.succeeded.increment();
        m.duration.record(Duration.ofNanos(durationNanos));
    }

    /** A failed attempt; {@code dead} when it was the last one (or a permanent failure), else it will be retried. */
    public void failed(String topic, long durationNanos, boolean dead) {
        TopicMeters m = of(topic);
        m.failed.increment();
        m.duration.record(Duration.ofNanos(durationNanos));
        (dead ? m.dead : m.retried).increment();
    }

    /** An attempt its observer snoozed: neither a success nor a failure; the job is due again later. */
    public void snoozed(String topic, long durationNanos) {
        TopicMeters m = of(topic);
        m.snoozed.increment();
        m.duration.record(Duration.ofNanos(durationNanos));
    }

    /**
     * Attempts lost with their replica (a lease that expired without an outcome, found by the
     * reclaimer): counted apart from failures, as the job's {@code lostAttempts} are;
     * {@code retried} of them rescheduled after a backoff, {@code dead} of them the loss that
     * reached {@code delayq.dispatch.max-lost-attempts} (those count in the dead jobs too).
     */
    public void lost(String topic, int retried, int dead) {
        if (retried + dead == 0) {
            return;
        }
        TopicMeters m = of(topic);
        m.lost.increment(retried + dead);
        m.dead.increment(dead);
    }

    /**
     * A cancel that took effect: a scheduled job deleted, or a job in flight marked (counted once,
     * when the mark is set; its attempt then ends on the replica running it).
     */
    public void cancelled(String topic) {
        of(topic).cancelled.increment();
    }

    /**
     * An attempt of the topic ran past its timeout and its observer has not returned yet (+1), or
     * such an observer returned at last (-1): the gauge {@code delayq.attempts.overdue}.
     */
    public void overdue(String topic, int delta) {
        of(topic).overdue.addAndGet(delta);
    }

    /**
     * The topic's counters since this process started, and its lateness histogram (cumulative
     * counts at each bucket bound, seconds): what the dashboard turns into recent rates.
     */
    public record Totals(double enqueued, double succeeded, double failed, double[] latenessBoundsSec,
            double[] latenessCumulative) {
    }

    /** The topics this process has meters of their own for (not {@link LocalTopics#OTHER}, the sum of the others). */
    public java.util.Set<String> topics() {
        java.util.Set<String> own = new java.util.HashSet<>(byTopic.keySet());
        own.removeIf(t -> !local.contains(t));
        return own;
    }

    public Totals totals(String topic) {
        TopicMeters m = of(topic);
        io.micrometer.core.instrument.distribution.CountAtBucket[] buckets = m.lateness.takeSnapshot().histogramCounts();
        double[] bounds = new double[buckets.length];
        double[] counts = new double[buckets.length];
        for (int i = 0; i < buckets.length; i++) {
            bounds[i] = buckets[i].bucket(java.util.concurrent.TimeUnit.SECONDS);
            counts[i] = buckets[i].count();
        }
        return new Totals(m.enqueued.count(), m.succeeded.count(), m.failed.count(), bounds, counts);
    }

    private final class TopicMeters {
        final Counter enqueued, dispatched, succeeded, failed, retried, dead, snoozed, lost, cancelled, deadTrimmed,
                expired, resultsDropped;
        final Timer lateness, duration, take;
        final AtomicInteger overdue = new AtomicInteger();

        TopicMeters(String topic) {
            enqueued = counter("delayq.jobs.enqueued", topic, "Jobs accepted (new ids only)");
            dispatched = counter("delayq.jobs.dispatched", topic, "Attempts handed to an observer");
            succeeded = counter("delayq.jobs.succeeded", topic, "Attempts whose observer returned normally");
            failed = counter("delayq.jobs.failed", topic, "Attempts whose observer threw or timed out");
            retried = counter("delayq.jobs.retried", topic, "Failed attempts rescheduled with backoff");
            dead = counter("delayq.jobs.dead", topic,
                    "Jobs moved to the dead set after their last attempt or a permanent failure");
            deadTrimmed = counter("delayq.jobs.dead.trimmed", topic,
                    "Dead jobs removed by the dead set's retention (delayq.dead.max-jobs, max-age): gone for good");
            expired = counter("delayq.jobs.expired", topic,
                    "Jobs sent to the dead set because their expiresAt passed (not started by then, or a retry, snooze,"
                            + " rerun or reschedule would have come after it)");
            resultsDropped = counter("delayq.jobs.results.dropped", topic,
                    "Results of succeeded jobs not kept whole (result-retention): larger than the payload limit or not"
                            + " JSON (dropped), or an HTTP target's body cut at the limit");
            snoozed = counter("delayq.jobs.snoozed", topic, "Attempts whose observer snoozed the job (not counted as failed)");
            lost = counter("delayq.jobs.lost", topic,
                    "Attempts whose lease expired without an outcome (replica crashed, cut off or frozen); not failed");
            cancelled = counter("delayq.jobs.cancelled", topic,
                    "Jobs cancelled: scheduled ones deleted, and ones in flight whose attempt is ended (not retried)");
            Gauge.builder("delayq.attempts.overdue", overdue, AtomicInteger::get)
                    .description("Attempts past their timeout whose observer has not returned yet (each holds its slot and thread)")
                    .tag("topic", topic).strongReference(true).register(registry);
            lateness = Timer.builder("delayq.job.lateness").description("Dispatch time minus runAt (Redis clock)")
                    .tag("topic", topic).publishPercentileHistogram()
                    .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(10))
                    .register(registry);
            duration = Timer.builder("delayq.job.duration").description("Observer run time per attempt")
                    .tag("topic", topic).publishPercentileHistogram()
                    .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(10))
                    .register(registry);
            take = Timer.builder("delayq.take").description("Round trip of one take script call")
                    .tag("topic", topic).publishPercentiles(0.5, 0.99)
                    .register(registry);
        }

        private Counter counter(String name, String topic, String description) {
            return Counter.builder(name).description(description).tag("topic", topic).register(registry);
        }
    }
}
