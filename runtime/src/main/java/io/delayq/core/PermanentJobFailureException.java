package io.delayq.core;

/**
 * Thrown by an observer for a job that can never succeed (the order it closes no longer exists,
 * the payload is invalid): the job goes straight to the dead set with this error, whatever
 * attempts it has left. Any other exception is retried with backoff. The exception may be the
 * cause of another one (e.g. wrapped by a library): delayq looks along the causes.
 */
public class PermanentJobFailureException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public PermanentJobFailureException(String message) {
        super(message);
    }

    public PermanentJobFailureException(String message, Throwable cause) {
        super(message, cause);
    }
}
