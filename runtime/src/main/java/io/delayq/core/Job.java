package io.delayq.core;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BooleanSupplier;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A due job handed to an observer: {@code void close(@Observes @JobTopic("order-close") Job job)}.
 * Returning normally acknowledges it; throwing fails this attempt (retry with backoff, then dead);
 * {@link #snooze(Duration)} runs it again later without counting the attempt;
 * {@link PermanentJobFailureException} sends it to the dead set at once.
 */
public final class Job {
    private final String id;
    private final String topic;
    private final int attempt;
    private final Instant runAt;
    private final String payloadJson;
    private final Long timeoutMs;
    private final ObjectMapper mapper;
    private final String traceparent;
    private final BooleanSupplier cancelled;
    /** What {@link #result(Object)} set (null until then: a result of null is kept as JSON null). */
    private volatile Object result;
    private volatile boolean resultSet;
    private volatile boolean resultCut;
    private volatile boolean resultBody;

    public Job(String id, String topic, int attempt, Instant runAt, String payloadJson, ObjectMapper mapper) {
        this(id, topic, attempt, runAt, payloadJson, mapper, null);
    }

    public Job(String id, String topic, int attempt, Instant runAt, String payloadJson, ObjectMapper mapper,
            String traceparent) {
        this(id, topic, attempt, runAt, payloadJson, mapper, traceparent, () -> false);
    }

    /** @param cancelled whether this attempt's cancel was asked (see {@link #cancelled()}) */
    public Job(String id, String topic, int attempt, Instant runAt, String payloadJson, ObjectMapper mapper,
            String traceparent, BooleanSupplier cancelled) {
        this(id, topic, attempt, runAt, payloadJson, mapper, traceparent, cancelled, null);
    }

    /** @param timeoutMs the job's own attempt timeout (its enqueue's {@code timeoutMs}), null = its topic's */
    public Job(String id, String topic, int attempt, Instant runAt, String payloadJson, ObjectMapper mapper,
            String traceparent, BooleanSupplier cancelled, Long timeoutMs) {
        this.timeoutMs = timeoutMs;
        this.cancelled = Objects.requireNonNull(cancelled, "cancelled");
        this.id = id;
        this.topic = topic;
        this.attempt = attempt;
        this.runAt = runAt;
        this.payloadJson = payloadJson;
        this.mapper = mapper;
        this.traceparent = traceparent;
    }

    /**
     * The job's own attempt timeout in ms, given at enqueue ({@code timeoutMs}): it replaces the
     * topic's attempt timeout, and an HTTP target's {@code http.timeout}, for this job. Empty when
     * the job follows its topic's.
     */
    public java.util.OptionalLong timeoutMs() {
        return timeoutMs == null ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(timeoutMs);
    }

    /** The job id, unique per topic while the job exists. */
    public String id() {
        return id;
    }

    public String topic() {
        return topic;
    }

    /**
     * 1 for the first attempt, 2 for the first retry, and so on; a snoozed attempt does not
     * count (the run after a snooze has the same number).
     */
    public int attempt() {
        return attempt;
    }

    /** When the job was due (this attempt's due time, for a retry). */
    public Instant runAt() {
        return runAt;
    }

    /** The payload JSON exactly as it was enqueued ({@code null} when the job has none). */
    public String payloadJson() {
        return payloadJson;
    }

    /**
     * The W3C {@code traceparent} of this attempt's span (a child of the enqueue's trace), to hand
     * on to systems the observer calls; empty when the service does not trace.
     */
    public Optional<String> traceparent() {
        return Optional.ofNullable(traceparent);
    }

    /**
     * True once this job's cancel was asked ({@code DELETE /jobs/{topic}/{id}}, {@link Jobs#cancel})
     * while this attempt runs: an observer that works in steps checks it between them and returns.
     * The attempt is ended anyway (a synchronous observer's thread is interrupted, a reactive one's
     * subscription cancelled), and the job will not run again, whatever the observer returns.
     */
    public boolean cancelled() {
        return cancelled.getAsBoolean();
    }

    /** The payload read as {@code type} with the application's Jackson ObjectMapper. */
    public <T> T payload(Class<T> type) {
        try {
            return mapper.readValue(payloadJson, type);
        } catch (IOException e) {
            throw new UncheckedIOException("payload of job " + topic + "/" + id + " is not a " + type.getName(), e);
        }
    }

    /**
     * Ends this attempt without counting it and makes the job due again {@code delay} from now
     * (Redis time): {@link #attempt()} and the last error stay as they were. Always throws
     * {@link JobSnoozedException}, which the observer must let propagate. A delay beyond
     * {@code delayq.horizon} fails the attempt instead.
     *
     * @throws IllegalArgumentException when the delay is negative
     */
    public void snooze(Duration delay) {
        Objects.requireNonNull(delay, "delay");
        if (delay.isNegative()) {
            throw new IllegalArgumentException("snooze delay must be >= 0: " + delay);
        }
        throw new JobSnoozedException(this, delay, null);
    }

    /**
     * As {@link #snooze(Duration)}, due again at {@code time} (a time already passed = due now).
     */
    public void snoozeUntil(Instant time) {
        Objects.requireNonNull(time, "time");
        throw new JobSnoozedException(this, null, time);
    }

    /**
     * Sets what this job produced, kept with the job after its success when its topic has
     * {@code delayq.topics.<t>.result-retention}: written as JSON with the application's Jackson
     * ObjectMapper and shown as {@code result} by {@code GET /jobs/<t>/<id>}, the listing, the
     * dashboard and the CLI. Call it before returning (a synchronous observer), or before the
     * CompletionStage or Uni completes (an asynchronous or reactive one); the last call wins. A
     * result of a failed attempt is not kept. Storing it never fails the job: a result whose JSON
     * is larger than {@code delayq.api.max-payload-bytes}, or that cannot be written as JSON, is
     * dropped and the job flagged {@code resultDropped}. Without a retention it is ignored.
     */
    public void result(Object value) {
        this.result = value;
        this.resultBody = false;
        this.resultCut = false;
        this.resultSet = true;
    }

    /**
     * For delayq's HTTP target: a 2xx body that is not JSON, kept as a string; {@code cut} when it
     * is only the body's start (larger than the payload limit, or it broke off). Kept cut, flagged
     * {@code resultCut}, when written as a JSON string it is larger than the payload limit.
     */
    public void resultBody(String text, boolean cut) {
        this.result = text;
        this.resultBody = true;
        this.resultCut = cut;
        this.resultSet = true;
    }

    /** Whether {@link #result(Object)} (or {@link #resultBody}) was called. */
    public boolean hasResult() {
        return resultSet;
    }

    /** What {@link #result(Object)} set; null when nothing (see {@link #hasResult()}). */
    public Object resultValue() {
        return result;
    }

    /** Whether the result is an HTTP body's text ({@link #resultBody}): cut to fit, never dropped. */
    public boolean resultIsBody() {
        return resultBody;
    }

    /** Whether the result is only the start of an HTTP body ({@link #resultBody}). */
    public boolean resultIsCut() {
        return resultCut;
    }

    @Override
    public String toString() {
        return "Job[" + topic + "/" + id + ", attempt " + attempt + ", runAt " + runAt + "]";
    }
}
