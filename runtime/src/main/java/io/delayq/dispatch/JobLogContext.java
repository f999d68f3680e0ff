package io.delayq.dispatch;

import org.jboss.logging.MDC;

import io.delayq.core.Job;

/**
 * The job in the logging context (MDC) while delayq runs it: the observer's own log lines and
 * delayq's lines about the job carry {@value #JOB_ID}, {@value #TOPIC} and {@value #ATTEMPT}
 * (fields of their own with quarkus-logging-json; {@code %X{delayq.jobId}} in a text format).
 * Closing restores what the thread had before.
 */
final class JobLogContext implements AutoCloseable {
    static final String JOB_ID = "delayq.jobId";
    static final String TOPIC = "delayq.topic";
    static final String ATTEMPT = "delayq.attempt";
    private final Object id;
    private final Object topic;
    private final Object attempt;

    private JobLogContext() {
        this.id = MDC.get(JOB_ID);
        this.topic = MDC.get(TOPIC);
        this.attempt = MDC.get(ATTEMPT);
    }

    static JobLogContext of(Job job) {
        JobLogContext previous = new JobLogContext();
        MDC.put(JOB_ID, job.id());
        MDC.put(TOPIC, job.topic());
        MDC.put(ATTEMPT, Integer.toString(job.attempt()));
        return previous;
    }

    @Override
    public void close() {
        restore(JOB_ID, id);
        restore(TOPIC, topic);
        restore(ATTEMPT, attempt);
    }

    private static void restore(String key, Object value) {
        if (value == null) {
            MDC.remove(key);
        } else {
            MDC.put(key, value);
        }
    }
}
