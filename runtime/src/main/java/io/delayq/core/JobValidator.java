package io.delayq.core;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.time.Instant;
import java.util.regex.Pattern;

import jakarta.enterprise.context.ApplicationScoped;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The rules every job must pass, for REST and Java producers alike; each failure names its field.
 */
@ApplicationScoped
public class JobValidator {
    /**
     * A topic's rule, as text for messages and build-time checks; requests are checked by
     * {@link #isTopic(String)}, the same rule as a char loop (see there).
     */
    public static final Pattern TOPIC = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");
    /** An id's (and a group's) rule, as text for messages; requests are checked by {@link #isId(String)}. */
    public static final Pattern ID = Pattern.compile("[A-Za-z0-9._:-]{1,128}");
    private static final char[] ID_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".toCharArray();

    private final DelayqConfig config;
    private final RedisTime clock;

    public JobValidator(DelayqConfig config, RedisTime clock) {
        this.config = config;
        this.clock = clock;
    }

    public static void checkTopic(String field, String topic) {
        if (topic == null || topic.isEmpty()) {
            throw new InvalidJobException(field, field + " is required");
        }
        if (!isTopic(topic)) {
            throw new InvalidJobException(field, field + " must match " + TOPIC.pattern());
        }
    }

    public static void checkId(String field, String id) {
        if (!isId(id)) {
            throw new InvalidJobException(field, field + " must match " + ID.pattern());
        }
        // "." and ".." match the pattern but cannot be addressed in a URL path (/jobs/t/..):
        // such a job could be created but never read or cancelled.
        if (id.equals(".") || id.equals("..")) {
            throw new InvalidJobException(field, field + " must not be \".\" or \"..\" (not addressable in a URL path)");
        }
    }

    /**
     * Whether {@code s} matches {@link #TOPIC}, by a loop over its chars: every request checks a
     * topic and an id, and java.util.regex was among the code a fresh replica's C2 compiles during
     * its first seconds of load (bench/RESULTS.md, issue 36's cold start); a loop is less to
     * compile and cheaper warm. JobValidatorTest holds it to the pattern.
     */
    public static boolean isTopic(String s) {
        int n = s == null ? 0 : s.length();
        if (n == 0 || n > 64) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '.' || c == '_' || c == '-')))) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code s} matches {@link #ID}, by a loop over its chars (as {@link #isTopic(String)}). */
    public static boolean isId(String s) {
        int n = s == null ? 0 : s.length();
        if (n == 0 || n > 128) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':'
                    || c == '-')) {
                return false;
            }
        }
        return true;
    }

    /**
     * Checks a job asked for from Java code and returns it ready for the store: its payload
     * written as JSON with {@code mapper}, then every rule of {@link #validate(String, String, Long,
     * String, Integer, String, IfExists, JobRetry, String)}.
     */
    public NewJob validate(JobRequest request, ObjectMapper mapper) {
        String json;
        try {
            json = request.payload == null ? null : mapper.writeValueAsString(request.payload);
        } catch (JsonProcessingException e) {
            throw new InvalidJobException("payload", "payload cannot be written as JSON: " + e.getOriginalMessage());
        }
        return validate(request.topic, request.id, request.delay == null ? null : millis(request.delay),
                request.runAt == null ? null : request.runAt.toString(), request.maxAttempts, json,
                request.ifExists, JobRetry.of(request.retryInitial == null ? null : millis(request.retryInitial),
                        request.retryMax == null ? null : millis(request.retryMax)), request.group,
                request.timeout == null ? null : millis(request.timeout),
                request.expiresAt == null ? null : request.expiresAt.toString(), request.priority);
    }

    /**
     * A delay in ms, saturated rather than overflowing (Duration.toMillis throws past Long.MAX_VALUE
     * ms): the validator then refuses it as beyond the horizon, naming delayMs.
     */
    public static long millis(Duration delay) {
        try {
            return delay.toMillis();
        } catch (ArithmeticException e) {
            return delay.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
    }

    /**
     * Checks one job and returns it ready for the store.
     *
     * @param delayMs null when not given
     * @param runAt null when not given, else the raw ISO-8601 text
     * @param maxAttempts null when not given
     * @param payloadJson JSON of the payload as sent (never re-serialised), null when none
     */
    public NewJob validate(String topic, String id, Long delayMs, String runAt, Integer maxAttempts, String payloadJson) {
        return validate(topic, id, delayMs, runAt, maxAttempts, payloadJson, IfExists.KEEP);
    }

    /** As above, with what happens when the id exists (null: {@link IfExists#KEEP}). */
    public NewJob validate(String topic, String id, Long delayMs, String runAt, Integer maxAttempts, String payloadJson,
            IfExists ifExists) {
        return validate(topic, id, delayMs, runAt, maxAttempts, payloadJson, ifExists, null);
    }

    /** As above, with the job's own retry backoff (null: the topic's). */
    public NewJob validate(String topic, String id, Long delayMs, String runAt, Integer maxAttempts, String payloadJson,
            IfExists ifExists, JobRetry retry) {
        return validate(topic, id, delayMs, runAt, maxAttempts, payloadJson, ifExists, retry, null);
    }

    /** As above, with the job's group (null: none), which follows the id's pattern. */
    public NewJob validate(String topic, String id, Long delayMs, String runAt, Integer maxAttempts, String payloadJson,
            IfExists ifExists, JobRetry retry, String group) {
        return validate(topic, id, delayMs, runAt, maxAttempts, payloadJson, ifExists, retry, group, null, null);
    }

    /** The longest attempt timeout a job may ask for ({@code timeoutMs}): 24 h. */
    public static final long MAX_TIMEOUT_MS = 86_400_000L;

    /**
     * As above, with the job's own limits: {@code timeoutMs} (null: the topic's attempt timeout),
     * 1 ms .. 24 h; {@code expiresAt} (null: none; else the raw ISO-8601 text), after the job's runAt.
     */
    public NewJob validate(String topic, String id, Long delayMs, String runAt, Integer maxAttempts, String payloadJson,
            IfExists ifExists, JobRetry retry, String group, Long timeoutMs, String expiresAt) {
        return validate(topic, id, delayMs, runAt, maxAttempts, payloadJson, ifExists, retry, group, timeoutMs, expiresAt,
                null);
    }

    /**
     * As above, with the job's priority: 1 (first) .. 5 (last); null = not given (3 for a new job,
     * the stored one for a replace or extend).
     */
    public NewJob validate(String topic, String id, Long delayMs, String runAt, Integer maxAttempts, String payloadJson,
            IfExists ifExists, JobRetry retry, String group, Long timeoutMs, String expiresAt, Integer priority) {
        checkTopic("topic", topic);
        if (priority != null && (priority < 1 || priority > 5)) {
            throw new InvalidJobException("priority", "priority must be an integer between 1 (first) and 5 (last)");
        }
        if (group != null) {
            checkId("group", group);
        }
        if (id == null) {
            id = newId();
        } else {
            checkId("id", id);
        }
        Timing when = timing(delayMs, runAt == null ? null : parseRunAt(runAt));
        if (maxAttempts != null && (maxAttempts < 1 || maxAttempts > 1000)) {
            throw new InvalidJobException("maxAttempts", "maxAttempts must be between 1 and 1000");
        }
        checkRetry(retry);
        if (timeoutMs != null && (timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS)) {
            throw new InvalidJobException("timeoutMs", "timeoutMs must be between 1 and " + MAX_TIMEOUT_MS + " (ms, 24 h)");
        }
        Long expires = expiresAt == null ? null : expiresAt(expiresAt, when);
        if (payloadJson != null) {
            int size = payloadJson.getBytes(StandardCharsets.UTF_8).length;
            int limit = config.api().maxPayloadBytes();
            if (size > limit) {
                throw new InvalidJobException("payload", "payload is " + size + " bytes, more than the limit of " + limit, 413);
            }
        }
        return new NewJob(topic, id, when.delayed(), when.millis(), maxAttempts == null ? 0 : maxAttempts, payloadJson,
                ifExists, retry, group, timeoutMs, expires, priority);
    }

    /**
     * An expiresAt as sent (ISO-8601 text), after the job's runAt: a delay's runAt counted from
     * Redis' now as the clock estimates it. Returns its epoch ms.
     */
    private long expiresAt(String text, Timing when) {
        long ms;
        try {
            ms = Instant.parse(text).toEpochMilli();
        } catch (RuntimeException e) {
            throw new InvalidJobException("expiresAt", "expiresAt must be an ISO-8601 instant such as 2026-11-30T12:00:00Z");
        }
        long runAt = when.delayed() ? clock.redisNow() + when.millis() : when.millis();
        if (ms <= runAt) {
            throw new InvalidJobException("expiresAt", "expiresAt (" + text + ") must be after the job's runAt ("
                    + Instant.ofEpochMilli(runAt) + ")");
        }
        return ms;
    }

    /**
     * A job's own retry backoff: each value given at least 1 ms and at most the horizon (a retry
     * further ahead would put the job beyond it), and the initial delay no more than the max.
     */
    public void checkRetry(JobRetry retry) {
        if (retry == null) {
            return;
        }
        long horizon = config.horizon().toMillis();
        checkRetryValue("retry.initialMs", retry.initialMs(), horizon);
        checkRetryValue("retry.maxMs", retry.maxMs(), horizon);
        if (retry.initialMs() != null && retry.maxMs() != null && retry.initialMs() > retry.maxMs()) {
            throw new InvalidJobException("retry.initialMs", "retry.initialMs (" + retry.initialMs()
                    + ") must not be more than retry.maxMs (" + retry.maxMs() + ")");
        }
    }

    private static void checkRetryValue(String field, Long ms, long horizon) {
        if (ms == null) {
            return;
        }
        if (ms < 1) {
            throw new InvalidJobException(field, field + " must be at least 1 (ms)");
        }
        if (ms > horizon) {
            throw new InvalidJobException(field, field + " must be at most the horizon of " + horizon + " ms");
        }
    }

    /**
     * When a job runs: {@code delayed} true = {@code millis} after Redis now, false = at epoch ms
     * {@code millis}.
     */
    public record Timing(boolean delayed, long millis) {
    }

    /**
     * Checks a job's time, given as at most one of a delay and an instant (enqueue, reschedule);
     * neither means now.
     */
    public Timing timing(Long delayMs, Instant runAt) {
        if (delayMs != null && runAt != null) {
            throw new InvalidJobException("runAt", "give either delayMs or runAt, not both");
        }
        long horizon = config.horizon().toMillis();
        if (runAt != null) {
            checkRunAt(runAt, horizon, clock);
            return new Timing(false, runAt.toEpochMilli());
        }
        if (delayMs == null) {
            return new Timing(true, 0);
        }
        if (delayMs < 0) {
            throw new InvalidJobException("delayMs", "delayMs must be >= 0");
        }
        if (delayMs > horizon) {
            throw new InvalidJobException("delayMs", "delayMs must be at most the horizon of " + horizon + " ms");
        }
        return new Timing(true, delayMs);
    }

    /** A runAt as sent (ISO-8601 text). */
    public static Instant parseRunAt(String runAt) {
        try {
            return Instant.parse(runAt);
        } catch (RuntimeException e) {
            throw new InvalidJobException("runAt", "runAt must be an ISO-8601 instant such as 2026-11-30T12:00:00Z");
        }
    }

    /**
     * A runAt may lie in the past (due at once) but not beyond the horizon nor before 1970. The
     * horizon is counted from Redis' now, the one clock of every pod, as the clock estimates it
     * without a round trip: a pod whose own clock is off accepts what the others accept. (A
     * {@code delayMs} needs no clock: it is added to Redis' now in the script.)
     */
    private static void checkRunAt(Instant at, long horizonMs, RedisTime clock) {
        long ms;
        try {
            ms = at.toEpochMilli();
        } catch (ArithmeticException e) {
            throw new InvalidJobException("runAt", "runAt is out of range");
        }
        if (ms < 0) {
            throw new InvalidJobException("runAt", "runAt must not be before 1970-01-01T00:00:00Z");
        }
        if (ms > clock.redisNow() + horizonMs) {
            throw new InvalidJobException("runAt", "runAt must be within the horizon of " + horizonMs + " ms from now");
        }
    }

    /** 16 random base-62 characters (95 bits): short, because ids are stored twice per job. */
    public static String newId() {
        char[] c = new char[16];
        for (int i = 0; i < c.length; i++) {
            c[i] = ID_CHARS[ThreadLocalRandom.current().nextInt(ID_CHARS.length)];
        }
        return new String(c);
    }
}
