package io.delayq.bench;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.delayq.ops.DelayqMetrics;

/** No-op observers: they only record when they started. */
@ApplicationScoped
public class BenchObservers {
    private final Recorder recorder;
    private final DelayqMetrics metrics;

    public BenchObservers(Recorder recorder, DelayqMetrics metrics) {
        this.recorder = recorder;
        this.metrics = metrics;
    }

    void bench(@Observes @JobTopic("bench") Job job) {
        recorder.record(job.id());
    }

    void backlogSmall(@Observes @JobTopic("bench-small") Job job) {
        recorder.record(job.id());
    }

    void dedup(@Observes @JobTopic("bench-dedup") Job job) {
        recorder.record(job.id());
    }

    /** Keeps a small result with each job (delayq.topics.bench-results.result-retention). */
    void results(@Observes @JobTopic("bench-results") Job job) {
        recorder.record(job.id());
        job.result(java.util.Map.of("ok", true, "id", job.id()));
    }

    void flow(@Observes @JobTopic("bench-flow") Job job) {
        recorder.record(job.id());
    }

    void groupsLoose(@Observes @JobTopic(FlowScenario.GROUPS_LOOSE) Job job) {
        recorder.record(job.id());
    }

    void groupsOne(@Observes @JobTopic(FlowScenario.GROUPS_ONE) Job job) {
        recorder.record(job.id());
    }

    void groupRate(@Observes @JobTopic(GroupRateScenario.TOPIC) Job job) {
        recorder.record(job.id());
    }

    /**
     * The priority scenario's served backlog: each job works {@link PriorityScenario#WORK_MS} ms, so
     * the workers stay busy and the backlog due; the takes of the topic so far are noted as it starts.
     */
    void priority(@Observes @JobTopic(PriorityScenario.TOPIC) Job job) {
        recorder.record(job.id());
        PriorityScenario.started(job.id(), metrics.takeTimer(PriorityScenario.TOPIC).count());
        try {
            Thread.sleep(PriorityScenario.WORK_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    void outbox(@Observes @JobTopic(OutboxLoad.TOPIC) Job job) {
        OutboxLoad.arrived(job.id());
    }

    void backlogBig(@Observes @JobTopic("bench-big") Job job) {
        recorder.record(job.id());
    }

    /**
     * The cancel scenario's jobs: a synchronous observer that would run for two minutes and
     * records when its cancel interrupts it (then returns: the attempt ends as cancelled).
     */
    void cancel(@Observes @JobTopic(CancelScenario.TOPIC) Job job) {
        recorder.record(job.id());
        try {
            Thread.sleep(120_000);
        } catch (InterruptedException e) {
            recorder.ended(job.id());
        }
    }
}
