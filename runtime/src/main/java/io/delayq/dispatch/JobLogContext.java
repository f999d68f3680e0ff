package io.delayq.dispatch;

import org.jboss.logging.MDC;

import io.delayq.core.Job;

/**
 * The job in the logging context (MDC) while delayq runs it: the observer's own log lines and
 * delayq's lines about the job carry {@value #JOB_ID}, {@value #TOPIC} and {@value #ATTEMPT}
 * (fields of their own with quarkus-logging-json; {@code %X{delayq.jobId}} in a text format).
 * Closing removes them: Quarkus' MDC is inherited by threads created meanwhile, so a value
 * "restored" on a pooled thread would follow it into unrelated work.
 */
final class JobLogContext implements AutoCloseable {
    static final String JOB_ID = "delayq.jobId";
    static final String TOPIC = "delayq.topic";
    static final String ATTEMPT = "delayq.attempt";

    private JobLogContext() {
    }

    static JobLogContext of(Job job) {
        MDC.put(JOB_ID, job.id());
        MDC.put(TOPIC, job.topic());
        MDC.put(ATTEMPT, Integer.toString(job.attempt()));
        return new JobLogContext();
    }

    @Override
    public void close() {
        MDC.remove(JOB_ID);
        MDC.remove(TOPIC);
        MDC.remove(ATTEMPT);
    }
}
