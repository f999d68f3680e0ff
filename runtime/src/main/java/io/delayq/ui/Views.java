package io.delayq.ui;

import java.util.List;

import io.quarkus.qute.TemplateData;

/**
 * What the dashboard's templates show: values already formatted as text (the templates only
 * place them, and Qute escapes every one of them as HTML).
 */
final class Views {
    private Views() {
    }

    /**
     * What every page knows: where delayq's endpoints are ({@code root}, the REST root) and the
     * static files ({@code assets}, the HTTP root), and what the viewer may do.
     */
    @TemplateData
    record Page(String root, String assets, String title, boolean producer, boolean operator) {
    }

    @TemplateData
    record Overview(Page page, List<TopicRow> topics, int replicas, List<ScheduleRow> schedules, String at) {
    }

    /** One topic in the overview; rates are per second over the last minute, summed over replicas. */
    @TemplateData
    record TopicRow(String topic, long scheduled, long dueNow, String oldestDue, long inflight, long dead, boolean paused,
            String rateLimit, String servedBy, String enqueued, String succeeded, String failed, String latenessP99) {
    }

    @TemplateData
    record ScheduleRow(String name, String source, String when, String topic, String lastTick, String nextTick) {
    }

    @TemplateData
    record Topic(Page page, String topic, String message, long scheduled, long dueNow, String oldestDue, long inflight,
            long dead, boolean paused, String rateLimit, String servedBy, List<Bar> timeline, List<JobRow> next,
            List<InflightRow> running, List<DeadRow> deadJobs, String at) {
    }

    /** One hour of the timeline: jobs falling due in it; {@code pct} of the fullest hour. */
    @TemplateData
    record Bar(String label, long count, long pct) {
    }

    @TemplateData
    record JobRow(String id, String runAt, String due, int attempts, String preview) {
    }

    @TemplateData
    record InflightRow(String id, String holder, int attempt, String age, String leaseLeft) {
    }

    @TemplateData
    record DeadRow(String id, String diedAt, int attempts, String lastError, String preview) {
    }

    @TemplateData
    record Job(Page page, String topic, String id, boolean found, String state, int attempts, String maxAttempts,
            String runAt, String finishedAt, String lastError, String payload) {
    }
}
