package io.delayq.store;

/**
 * Redis refused a write because it is full: its memory reached {@code maxmemory} under
 * {@code noeviction} (an OOM reply). Intake stops (an enqueue answers 503 saying so) while the
 * work held goes on: the scripts that only move or delete run with {@code allow-oom}
 * ({@link Scripts#ALLOW_OOM}).
 */
public class RedisFullException extends StoreUnavailableException {
    private static final long serialVersionUID = 1L;

    public RedisFullException(String message, Throwable cause, boolean refused) {
        super(message, cause, refused);
    }
}
