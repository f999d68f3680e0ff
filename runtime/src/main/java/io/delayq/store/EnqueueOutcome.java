package io.delayq.store;

/**
 * Whether one job of an enqueue that failed as "Redis unavailable" is in Redis
 * ({@link StoreUnavailableException#jobs()}): a batch is written partition by partition, each by
 * one atomic script, so a failure part-way leaves the earlier partitions written, and a script
 * that timed out may have run. A retry that reuses the ids (above all generated ones, which the
 * caller never saw) duplicates nothing.
 */
public record EnqueueOutcome(String id, String topic, Stored stored) {

    /** What is known of one job. */
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

        /** As the REST API spells it. */
        public String json() {
            return json;
        }
    }
}
