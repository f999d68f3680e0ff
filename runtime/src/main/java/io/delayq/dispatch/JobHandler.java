package io.delayq.dispatch;

import java.util.concurrent.CompletionStage;

import io.delayq.core.Job;

/**
 * Runs one job attempt; normal completion acks it, exceptional completion fails the attempt.
 * Called on a worker (virtual) thread, so an implementation may block (unless it says it
 * does not: {@link #blocking()}). It runs the observer
 * inside {@code context} (MDC, span), on whichever thread the observer runs.
 */
public interface JobHandler {
    CompletionStage<Void> handle(Job job, AttemptContext context) throws Exception;

    /** What serves the topic, for the start-up log and {@code GET /topics}. */
    String describe();

    /**
     * The shortest wait before retrying an attempt that failed with {@code error}, whatever the
     * backoff says: an HTTP target that timed out may still be working on the first call.
     */
    default long minRetryDelayMs(Throwable error) {
        return 0;
    }

    /**
     * Whether {@link #handle} may block its thread. A handler that only starts asynchronous work
     * and returns (the HTTP target) answers false: it is called on the taker's thread, and no
     * thread is started or held per job.
     */
    default boolean blocking() {
        return true;
    }

    /**
     * Whether cancelling the stage {@link #handle} returned ends the work (an HTTP call is aborted,
     * a reactive pipeline unsubscribed). False for {@code @ObservesAsync} observers: their threads
     * go on whatever becomes of the stage, so a timed-out attempt keeps its slot and lease until
     * they end, as a synchronous observer does.
     */
    default boolean cancelEndsWork() {
        return true;
    }
}
