package io.delayq.ui;

import java.util.List;

import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * What the dashboard's templates show: values already formatted as text (the templates only
 * place them, and Qute escapes every one of them as HTML). Public and registered for reflection:
 * the templates read them through Qute's reflection resolver, in a native image too.
 */
public final class Views {
    private Views() {
    }

    /**
     * What every page knows: where delayq's endpoints are ({@code root}, the REST root) and the
     * static files ({@code assets}, the HTTP root), and what the viewer may do.
     */
    @RegisterForReflection
    public record Page(String root, String assets, boolean producer, boolean operator) {
    }

    @RegisterForReflection
    public record Overview(Page page, List<TopicRow> topics, int replicas, List<ScheduleRow> schedules, String at) {
    }

    /**
     * One topic in the overview; rates are per second over the last minute, summed over replicas.
     * {@code throttledUntil}: until when its HTTP target asked for no call (UTC), null when it did not.
     * {@code maxInFlight}: "3/5 in flight" under a concurrency cap, "—" without one.
     */
    @RegisterForReflection
    public record TopicRow(String topic, long scheduled, long dueNow, String oldestDue, long inflight, long dead, boolean paused,
            String throttledUntil, String rateLimit, String maxInFlight, String servedBy, String enqueued, String succeeded, String failed, String latenessP99) {
    }

    @RegisterForReflection
    public record ScheduleRow(String name, String source, String when, String topic, String lastTick, String nextTick,
            boolean paused) {
    }

    @RegisterForReflection
    public record Topic(Page page, String topic, String message, long scheduled, long dueNow, String oldestDue, long inflight,
            long dead, boolean paused, String throttledUntil, String rateLimit, String maxInFlight, String servedBy,
            List<Bar> timeline, List<JobRow> next, long heldCount, List<HeldRow> held,
            List<InflightRow> running, List<DeadRow> deadJobs, List<FailedCallbackRow> failedCallbacks, String at,
            DeadFilter deadFilter, String groupRateLimit) {
    }

    /**
     * The topic page's dead-list filter: {@code active} when one of id prefix and error text is
     * set; {@code query} carries it in URLs (already encoded); {@code matching} dead jobs match
     * among the newest {@code examined} of each partition ({@code count} says "N+" when there are
     * more); {@code describe} says it in words.
     */
    @RegisterForReflection
    public record DeadFilter(boolean active, String idPrefix, String error, String query, long matching, String count,
            String describe, int examined) {
    }

    /** The "Find job" box's answer: what was asked, how many topics were looked at, what was found. */
    @RegisterForReflection
    public record Find(Page page, String query, int topics, boolean capped, List<Found> found, String message) {
    }

    /** A job found by the "Find job" box, with its state. */
    @RegisterForReflection
    public record Found(String topic, String id, String state) {
    }

    /** One hour of the timeline: jobs falling due in it; {@code pct} of the fullest hour. */
    @RegisterForReflection
    public record Bar(String label, long count, long pct) {
    }

    /**
     * A job of a topic page's table; {@code priority} as {@link Pages#priority} shows it (null for 3),
     * here and in the other job tables.
     */
    @RegisterForReflection
    public record JobRow(String id, String runAt, String due, int attempts, String preview, Integer priority) {
    }

    /** A job its group holds back: due (or not yet), waiting for the group's running jobs to end. */
    @RegisterForReflection
    public record HeldRow(String id, String group, String runAt, String due, int attempts, String preview, Integer priority) {
    }

    @RegisterForReflection
    public record InflightRow(String id, String holder, int attempt, String age, String leaseLeft, boolean cancelling,
            Integer priority) {
    }

    /** A dead-job callback that failed for good (its last try's error). */
    @RegisterForReflection
    public record FailedCallbackRow(String id, String diedAt, int tries, String lastError) {
    }

    @RegisterForReflection
    public record DeadRow(String id, String diedAt, int attempts, int lostAttempts, String lastError, String preview,
            Integer priority) {
    }

    /**
     * A job's page; {@code retry} is its own retry backoff as shown ("200 ms → 400 ms"), null when it has none;
     * {@code timeout} and {@code expiresAt} its own limits as shown, null when it has none;
     * {@code priority} 1 (first) .. 5 (last), null when the job was not found; {@code result} a
     * succeeded job's kept result (pretty JSON), null when none, {@code resultNote} why it is missing or cut.
     */
    @RegisterForReflection
    public record Job(Page page, String topic, String id, boolean found, String state, int attempts, String maxAttempts,
            String retry, int lostAttempts, String runAt, String finishedAt, String lastError, String payload, String group,
            boolean held, boolean cancelling, String timeout, String expiresAt, Integer priority, String result,
            String resultNote) {
    }
}
