package io.delayq.core;

/**
 * What an enqueue through {@link Jobs} or {@link ReactiveJobs} does when the calling thread is
 * inside an active JTA transaction ({@code delayq.transactions}).
 */
public enum TransactionMode {
    /** Sent when the transaction commits, dropped when it rolls back. */
    AFTER_COMMIT,
    /** Sent at once, inside the transaction, as outside one. */
    IGNORE,
    /**
     * Written as a row of the service's database in that transaction, and relayed to Redis once
     * committed (the transactional outbox: needs {@code io.delayq:quarkus-delayq-outbox}).
     */
    OUTBOX
}
