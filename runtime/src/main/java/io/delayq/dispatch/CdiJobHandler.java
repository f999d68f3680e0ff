package io.delayq.dispatch;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import jakarta.enterprise.event.Event;

import io.delayq.core.Job;

/**
 * Hands a job to the CDI observers of its topic. Synchronous observers run in the calling
 * worker thread (a throw fails the attempt); {@code @ObservesAsync} observers complete through
 * the CompletionStage of {@code fireAsync}.
 */
final class CdiJobHandler implements JobHandler {
    private final Event<Job> event;
    private final boolean sync;
    private final boolean async;
    private final String observers;

    CdiJobHandler(Event<Job> event, boolean sync, boolean async, String observers) {
        this.event = event;
        this.sync = sync;
        this.async = async;
        this.observers = observers;
    }

    @Override
    public CompletionStage<Void> handle(Job job) {
        if (sync) {
            event.fire(job);
        }
        if (!async) {
            return CompletableFuture.completedFuture(null);
        }
        return event.fireAsync(job).thenApply(j -> null);
    }

    @Override
    public String describe() {
        return "observer " + observers;
    }
}
