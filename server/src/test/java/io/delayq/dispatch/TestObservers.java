package io.delayq.dispatch;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.ObservesAsync;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.delayq.core.PermanentJobFailureException;
import io.delayq.dev.Resp;
import io.delayq.support.RedisTestResource;

/** Observers of the dispatch tests; each records what it saw, with the Redis time it saw it. */
@ApplicationScoped
public class TestObservers {
    /** One delivery: the attempt and Redis server time (ms) when the observer started. */
    public record Delivery(String id, int attempt, long redisMs, String payload) {
    }

    public static final Map<String, List<Delivery>> RECORDED = new ConcurrentHashMap<>();
    public static final Map<String, List<Delivery>> FLAKY = new ConcurrentHashMap<>();
    public static final Map<String, List<Delivery>> ASYNC = new ConcurrentHashMap<>();
    public static final Map<String, List<Delivery>> LIFECYCLE = new ConcurrentHashMap<>();
    /** Deliveries of the dedup-window topics ("dedup", "dedup-short"), by job id. */
    public static final Map<String, List<Delivery>> DEDUP = new ConcurrentHashMap<>();
    /** Job id -> the Redis time (ms) its "until:" step snoozed it to. */
    public static final Map<String, Long> SNOOZED_UNTIL = new ConcurrentHashMap<>();
    public static final AtomicBoolean FLAKY_SUCCEEDS = new AtomicBoolean();
    private static Resp redis;

    static synchronized long redisTime() {
        List<Object> t;
        try {
            t = connection().list("TIME");
        } catch (RuntimeException e) {
            // The connection was cut (a test restarted Redis or killed its clients): a new one. An
            // observer failing on it would be retried with backoff, and the test waiting for it
            // would see a stall that is not delayq's.
            redis.close();
            redis = null;
            t = connection().list("TIME");
        }
        return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000;
    }

    private static Resp connection() {
        if (redis == null) {
            redis = RedisTestResource.resp();
        }
        return redis;
    }

    private static void record(Map<String, List<Delivery>> into, Job job) {
        into.computeIfAbsent(job.id(), k -> new CopyOnWriteArrayList<>())
                .add(new Delivery(job.id(), job.attempt(), redisTime(), job.payloadJson()));
    }

    void recorded(@Observes @JobTopic("rec") Job job) {
        record(RECORDED, job);
    }

    void dedup(@Observes @JobTopic("dedup") Job job) {
        record(DEDUP, job);
    }

    void dedupShort(@Observes @JobTopic("dedup-short") Job job) {
        record(DEDUP, job);
    }

    /**
     * Topic "results" (result-retention): sets a result from the payload, {"echo": X} gives
     * {"echo": X, "attempt": n}; {"size": N} a string of N characters (over the payload limit: dropped).
     */
    void results(@Observes @JobTopic("results") Job job) {
        Map<?, ?> p = job.payload(Map.class);
        if (p.containsKey("size")) {
            job.result("x".repeat(((Number) p.get("size")).intValue()));
        } else if (p.containsKey("echo")) {
            job.result(Map.of("echo", p.get("echo"), "attempt", job.attempt()));
        }
    }

    void flaky(@Observes @JobTopic("flaky") Job job) {
        record(FLAKY, job);
        if (!FLAKY_SUCCEEDS.get()) {
            throw new IllegalStateException("flaky failure on attempt " + job.attempt());
        }
    }

    void metered(@Observes @JobTopic("metered") Job job) {
        if (job.payloadJson() != null && job.payloadJson().contains("fail")) {
            throw new IllegalStateException("metered failure");
        }
    }

    void async(@ObservesAsync @JobTopic("async") Job job) {
        record(ASYNC, job);
        if (job.payload(Map.class).containsKey("fail")) {
            throw new IllegalArgumentException("async failure");
        }
    }

    /**
     * Plays the payload, a list of steps, one per delivery: "fail" throws, "after:N" snoozes N ms,
     * "until:N" snoozes until Redis now + N ms, "permanent" throws a permanent failure, "wrapped"
     * one as the cause of another exception, "sleep:N" blocks N ms (work that outlasts a timeout; an
     * interrupt ends it), "ok" (or no step left) returns.
     */
    void lifecycle(@Observes @JobTopic("lifecycle") Job job) {
        record(LIFECYCLE, job);
        List<?> steps = job.payload(List.class);
        int n = LIFECYCLE.get(job.id()).size();
        String step = n <= steps.size() ? steps.get(n - 1).toString() : "ok";
        if (step.equals("fail")) {
            throw new IllegalStateException("planned failure of delivery " + n);
        } else if (step.equals("permanent")) {
            throw new PermanentJobFailureException("order is gone");
        } else if (step.equals("wrapped")) {
            throw new IllegalStateException("a library wrapped it", new PermanentJobFailureException("order is gone"));
        } else if (step.startsWith("sleep:")) {
            try {
                Thread.sleep(Long.parseLong(step.substring(6)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted at its timeout", e);
            }
        } else if (step.startsWith("after:")) {
            job.snooze(Duration.ofMillis(Long.parseLong(step.substring(6))));
        } else if (step.startsWith("until:")) {
            long until = redisTime() + Long.parseLong(step.substring(6));
            SNOOZED_UNTIL.put(job.id(), until);
            job.snoozeUntil(Instant.ofEpochMilli(until));
        }
    }
}
