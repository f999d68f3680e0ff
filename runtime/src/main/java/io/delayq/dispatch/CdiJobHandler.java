package io.delayq.dispatch;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

import jakarta.enterprise.event.Event;
import jakarta.enterprise.event.NotificationOptions;

import io.delayq.core.Job;
import io.quarkus.arc.Arc;

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

    @Override
    public boolean cancelEndsWork() {
        return !async;
    }

    CdiJobHandler(Event<Job> event, boolean sync, boolean async, String observers) {
        this.event = event;
        this.sync = sync;
        this.async = async;
        this.observers = observers;
    }

    @Override
    public CompletionStage<Void> handle(Job job, AttemptContext context) {
        if (sync) {
            try (AttemptContext.Entered entered = context.enter()) {
                event.fire(job);
            }
        }
        if (!async) {
            return CompletableFuture.completedFuture(null);
        }
        // Each async notification enters the context on the executor's thread and leaves it
        // after: entering it here instead would leak the job into threads created meanwhile
        // (the logging MDC is inherited by new threads).
        Executor executor = Arc.container().getExecutorService();
        NotificationOptions options = NotificationOptions.ofExecutor(task -> executor.execute(() -> {
            try (AttemptContext.Entered entered = context.enter()) {
                task.run();
            }
        }));
        return event.fireAsync(job, options).thenApply(j -> null);
    }

    @Override
    public String describe() {
        return "observer " + observers;
    }
}
