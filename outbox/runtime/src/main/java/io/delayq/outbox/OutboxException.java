package io.delayq.outbox;

/** The outbox's database could not take or give back rows (the cause says why). */
public class OutboxException extends RuntimeException {
    public OutboxException(String message, Throwable cause) {
        super(message, cause);
    }
}
