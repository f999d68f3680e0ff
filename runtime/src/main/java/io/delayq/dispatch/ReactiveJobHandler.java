package io.delayq.dispatch;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import jakarta.enterprise.invoke.Invoker;

import io.delayq.core.Job;
import io.smallrye.common.vertx.VertxContext;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Context;
import io.vertx.core.Vertx;

/**
 * Runs the reactive observer of a topic (one that returns {@code Uni} or {@code CompletionStage}):
 * the attempt ends when what it returned completes, and no thread waits meanwhile. CDI would
 * ignore the returned value, so the observer is called through the ArC invoker built for it at
 * build time, never through {@code Event.fire}; the build lets no other observer share its topic.
 *
 * <p>Each attempt runs on a new Vert.x duplicated context (as Quarkus runs a reactive endpoint),
 * with the attempt's context (logging MDC, span) entered on it: Quarkus keeps both in the
 * duplicated context, so they follow the observer's continuations and no other work of the event
 * loop. They are left, on that context, when the attempt completes.
 */
final class ReactiveJobHandler implements JobHandler {
    private final Invoker<Object, Object> invoker;
    private final int eventPosition;
    private final int parameterCount;
    private final Vertx vertx;
    private final String observer;

    ReactiveJobHandler(TopicObserver o, Vertx vertx) {
        this.invoker = o.getInvoker().getValue();
        this.eventPosition = o.getEventPosition();
        this.parameterCount = o.getParameterCount();
        this.vertx = vertx;
        this.observer = o.describe();
    }

    @Override
    public CompletionStage<Void> handle(Job job, AttemptContext context) {
        CompletableFuture<Void> attempt = new CompletableFuture<>();
        Context duplicated = VertxContext.createNewDuplicatedContext(vertx.getOrCreateContext());
        duplicated.runOnContext(v -> start(job, context, duplicated, attempt));
        return attempt;
    }

    private void start(Job job, AttemptContext context, Context duplicated, CompletableFuture<Void> attempt) {
        if (attempt.isDone()) {
            return; // timed out while waiting for the event loop: its failure is recorded, its retry may run
        }
        AttemptContext.Entered entered = context.enter();
        CompletionStage<?> running;
        try {
            Object[] args = new Object[parameterCount]; // the other parameters are looked up by the invoker
            args[eventPosition] = job;
            running = subscribe(invoker.invoke(null, args));
        } catch (Throwable e) {
            // A throw before returning (a snooze, say) ends the attempt as it would a void observer.
            entered.close();
            attempt.completeExceptionally(e);
            return;
        }
        // The attempt timed out (JobRunner cancels it): stop the observer's work where it can be stopped.
        attempt.whenComplete((v, e) -> {
            if (attempt.isCancelled()) {
                cancel(running);
            }
        });
        running.whenComplete((v, e) -> onContext(duplicated, () -> {
            entered.close();
            if (e != null) {
                attempt.completeExceptionally(e);
            } else {
                attempt.complete(null);
            }
        }));
    }

    /** Subscribes once to what the observer returned. */
    private CompletionStage<?> subscribe(Object returned) {
        if (returned instanceof Uni<?> uni) {
            return uni.subscribeAsCompletionStage();
        }
        if (returned instanceof CompletionStage<?> stage) {
            return stage;
        }
        throw new IllegalStateException("observer " + observer + " returned " + returned
                + " instead of a Uni or CompletionStage: nothing to wait for");
    }

    private static void cancel(CompletionStage<?> running) {
        try {
            running.toCompletableFuture().cancel(true); // a Uni's subscription is cancelled with it
        } catch (UnsupportedOperationException e) {
            // a CompletionStage that cannot be cancelled runs on; its outcome no longer counts
        }
    }

    private static void onContext(Context context, Runnable task) {
        if (Vertx.currentContext() == context) {
            task.run();
        } else {
            context.runOnContext(v -> task.run());
        }
    }

    @Override
    public String describe() {
        return "observer " + observer;
    }
}
