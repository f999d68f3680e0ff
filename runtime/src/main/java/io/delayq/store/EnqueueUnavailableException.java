package io.delayq.store;

import java.util.List;

/**
 * An enqueue that failed as "Redis unavailable" (503) after some of its jobs may have been written:
 * {@link #jobs()} names every job of the request, in its order, with whether it is in Redis, so
 * that a retry reuses the same ids (above all generated ones, which the caller never saw) and
 * duplicates nothing. Partitions are written one after the other, each by one atomic script.
 */
public class EnqueueUnavailableException extends StoreUnavailableException {
    private static final long serialVersionUID = 1L;
    private final transient List<Outcome> jobs;

    /** Whether one job of the failed request is in Redis. */
    public enum Stored {
        /** Its partition's script ran: the job is there (new, or it existed). */
        STORED("stored"),
        /** Its partition's script never ran (refused by Redis, or never sent). */
        NOT_STORED("not stored"),
        /** Its partition's script may have run (a timeout, a connection lost after sending). */
        UNKNOWN("unknown");

        private final String json;

        Stored(String json) {
            this.json = json;
        }

        public String json() {
            return json;
        }
    }

    /** One job of the request and whether it is stored. */
    public record Outcome(String id, String topic, Stored stored) {
    }

    public EnqueueUnavailableException(StoreUnavailableException cause, List<Outcome> jobs) {
        super(cause.getMessage(), cause, cause.refused());
        this.jobs = List.copyOf(jobs);
    }

    /** Every job of the request, in request order. */
    public List<Outcome> jobs() {
        return jobs;
    }

    /** The failure of the partition that failed (a {@link NotReplicatedException} names its ids itself). */
    public StoreUnavailableException failure() {
        return (StoreUnavailableException) getCause();
    }
}
