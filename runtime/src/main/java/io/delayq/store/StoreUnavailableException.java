package io.delayq.store;

/** Redis could not be reached, timed out, or is not ready (loading, failing over). Retry later. */
public class StoreUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final boolean refused;

    public StoreUnavailableException(String message, Throwable cause) {
        this(message, cause, false);
    }

    /** @param refused see {@link #refused()} */
    public StoreUnavailableException(String message, Throwable cause, boolean refused) {
        super(message, cause);
        this.refused = refused;
    }

    /**
     * True when the request certainly did nothing: Redis answered that it did not run it (LOADING,
     * MISCONF, OOM, ...: a script refused so writes nothing) or no connection could be made. False
     * when it may have run: a timeout, or a connection lost after the request was sent.
     */
    public boolean refused() {
        return refused;
    }
}
