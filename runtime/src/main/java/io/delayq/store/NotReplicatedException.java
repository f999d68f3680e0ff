package io.delayq.store;

/**
 * An enqueue reached the Redis master but not {@code delayq.durability.replicas} replicas in
 * time: answered like "Redis unavailable" (503), with the ids in the message, since the jobs may
 * exist and a retry must reuse them (a generated id the caller never saw would make a second job).
 */
public class NotReplicatedException extends StoreUnavailableException {
    private static final long serialVersionUID = 1L;

    public NotReplicatedException(String message) {
        super(message, null);
    }
}
