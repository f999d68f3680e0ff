package io.delayq.dispatch;

import java.util.concurrent.CompletionStage;

import io.delayq.core.Job;

/**
 * Runs one job attempt; normal completion acks it, exceptional completion fails the attempt.
 * Called on a worker (virtual) thread, so an implementation may block.
 */
public interface JobHandler {
    CompletionStage<Void> handle(Job job) throws Exception;

    /** What serves the topic, for the start-up log and {@code GET /topics}. */
    String describe();
}
