package io.delayq.store;

/** Redis could not be reached, timed out, or is not ready (loading, failing over). Retry later. */
public class StoreUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public StoreUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
