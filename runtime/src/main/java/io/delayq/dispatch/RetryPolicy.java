package io.delayq.dispatch;

import java.util.concurrent.ThreadLocalRandom;

import jakarta.enterprise.context.ApplicationScoped;

import io.delayq.core.DelayqConfig;
import io.delayq.core.JobRetry;

/**
 * Exponential backoff with jitter: delay(n) = min(max, initial * multiplier^(n-1)), of which a
 * {@code jitter} fraction is random so that jobs that failed together do not retry together.
 * Topic settings override the global ones field by field, and a job's own initial and max delay
 * (given at enqueue) override its topic's.
 */
@ApplicationScoped
public class RetryPolicy {
    private final DelayqConfig config;

    public RetryPolicy(DelayqConfig config) {
        this.config = config;
    }

    /** A topic's backoff: delay before the next attempt = min(max, initial * multiplier^(n-1)), minus jitter. */
    public record Backoff(long initialMs, double multiplier, long maxMs, double jitter) {
    }

    public Backoff backoff(String topic) {
        DelayqConfig.Retry global = config.retry();
        DelayqConfig.Topic t = config.topics().get(topic);
        long initial = (t != null && t.retryInitial().isPresent() ? t.retryInitial().get() : global.initial()).toMillis();
        double multiplier = t != null && t.retryMultiplier().isPresent() ? t.retryMultiplier().getAsDouble() : global.multiplier();
        long max = (t != null && t.retryMax().isPresent() ? t.retryMax().get() : global.max()).toMillis();
        return new Backoff(initial, multiplier, max, Math.min(1.0, Math.max(0.0, global.jitter())));
    }

    /**
     * A job's backoff: its topic's, with the job's own initial and max delay in place of the
     * topic's when it set them at enqueue (see {@link JobRetry}; null: the topic's as it is).
     */
    public Backoff backoff(String topic, JobRetry own) {
        Backoff b = backoff(topic);
        if (own == null) {
            return b;
        }
        long[] bounds = own.applyTo(b.initialMs(), b.maxMs());
        return new Backoff(bounds[0], b.multiplier(), bounds[1], b.jitter());
    }

    /** Delay before the attempt after failed attempt number {@code attempt} (1-based), in ms. */
    public long delayMs(String topic, int attempt) {
        return delayMs(topic, attempt, null);
    }

    /** As above, for a job with its own retry backoff ({@code own}; null: the topic's). */
    public long delayMs(String topic, int attempt, JobRetry own) {
        Backoff b = backoff(topic, own);
        double base = Math.min((double) b.maxMs(), b.initialMs() * Math.pow(b.multiplier(), Math.max(0, attempt - 1)));
        return (long) (base * (1.0 - b.jitter() * ThreadLocalRandom.current().nextDouble()));
    }

    /** Attempts before dead for jobs that did not set their own. */
    public int maxAttempts(String topic) {
        DelayqConfig.Topic t = config.topics().get(topic);
        return t != null && t.maxAttempts().isPresent() ? t.maxAttempts().getAsInt() : config.retry().maxAttempts();
    }

    /** Lost attempts in a row before dead ({@code delayq.dispatch.max-lost-attempts}, at least 1). */
    public int maxLostAttempts() {
        return Math.max(1, config.dispatch().maxLostAttempts());
    }

    /** Longest run of one attempt of the topic, in ms. */
    public long attemptTimeoutMs(String topic) {
        DelayqConfig.Topic t = config.topics().get(topic);
        return (t != null && t.attemptTimeout().isPresent() ? t.attemptTimeout().get()
                : config.dispatch().attemptTimeout()).toMillis();
    }

    /** Jobs of the topic that may run at once on this replica. */
    public int concurrency(String topic) {
        DelayqConfig.Topic t = config.topics().get(topic);
        return t != null && t.concurrency().isPresent() ? t.concurrency().getAsInt() : config.dispatch().concurrency();
    }
}
