package io.delayq.store;

import java.util.List;

import io.vertx.core.Future;

/** Redis could not be reached, timed out, or is not ready (loading, failing over). Retry later. */
public class StoreUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final boolean refused;
    private transient List<EnqueueOutcome> jobs = List.of();

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

    /**
     * For the failure of an enqueue ({@code Jobs}): every job of the request, in its order, with
     * whether it is stored; empty for other calls.
     */
    public List<EnqueueOutcome> jobs() {
        return jobs;
    }

    /**
     * This failure, naming the jobs of the enqueue it ended (it keeps its type: a
     * {@link NotReplicatedException} stays one). Each failure is a new exception of its call.
     */
    public StoreUnavailableException naming(List<EnqueueOutcome> jobs) {
        this.jobs = List.copyOf(jobs);
        return this;
    }

    /** A failure before the script was sent: it certainly did nothing ({@link #refused()}). */
    static <T> Future<T> notSent(Throwable e) {
        return Future.failedFuture(e instanceof StoreUnavailableException u && !u.refused()
                ? new StoreUnavailableException(u.getMessage(), u, true)
                : e);
    }
}
