package io.delayq.dispatch;

import java.util.concurrent.ThreadLocalRandom;

import jakarta.enterprise.context.ApplicationScoped;

import io.delayq.core.DelayqConfig;

/**
 * Exponential backoff with jitter: delay(n) = min(max, initial * multiplier^(n-1)), of which a
 * {@code jitter} fraction is random so that jobs that failed together do not retry together.
 * Topic settings override the global ones field by field.
 */
@ApplicationScoped
public class RetryPolicy {
    private final DelayqConfig config;

    public RetryPolicy(DelayqConfig config) {
        this.config = config;
    }

    /** Delay before the attempt after failed attempt number {@code attempt} (1-based), in ms. */
    public long delayMs(String topic, int attempt) {
        DelayqConfig.Retry global = config.retry();
        DelayqConfig.Topic t = config.topics().get(topic);
        long initial = (t != null && t.retryInitial().isPresent() ? t.retryInitial().get() : global.initial()).toMillis();
        double multiplier = t != null && t.retryMultiplier().isPresent() ? t.retryMultiplier().getAsDouble() : global.multiplier();
        long max = (t != null && t.retryMax().isPresent() ? t.retryMax().get() : global.max()).toMillis();
        double base = Math.min((double) max, initial * Math.pow(multiplier, Math.max(0, attempt - 1)));
        double jitter = Math.min(1.0, Math.max(0.0, global.jitter()));
        return (long) (base * (1.0 - jitter * ThreadLocalRandom.current().nextDouble()));
    }

    /** Attempts before dead for jobs that did not set their own. */
    public int maxAttempts(String topic) {
        DelayqConfig.Topic t = config.topics().get(topic);
        return t != null && t.maxAttempts().isPresent() ? t.maxAttempts().getAsInt() : config.retry().maxAttempts();
    }

    /** Jobs of the topic that may run at once on this replica. */
    public int concurrency(String topic) {
        DelayqConfig.Topic t = config.topics().get(topic);
        return t != null && t.concurrency().isPresent() ? t.concurrency().getAsInt() : config.dispatch().concurrency();
    }
}
