package io.delayq.store;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

import io.vertx.core.Future;
import io.vertx.core.Promise;

/**
 * A counting semaphore whose waiters hold no thread: {@link #acquire} is a future that completes
 * when a permit is free (first come, first served) or fails when the wait is up. The enqueues
 * that wait for Redis replicas take turns through it, blocking and reactive callers alike.
 */
final class Turns {
    private final ArrayDeque<Promise<Void>> queue = new ArrayDeque<>();
    private int free;

    Turns(int permits) {
        this.free = permits;
    }

    /** A permit, to {@link #release()} once done; fails (TimeoutException) after {@code waitMs}. */
    Future<Void> acquire(long waitMs) {
        Promise<Void> turn = Promise.promise();
        synchronized (this) {
            if (free > 0 && queue.isEmpty()) {
                free--;
                return Future.succeededFuture();
            }
            queue.add(turn);
        }
        // The wait ends once: a permit handed over or the time up, whichever comes first
        // (tryComplete / tryFail); a waiter that gave up is skipped by release().
        turn.future().timeout(waitMs, TimeUnit.MILLISECONDS).onFailure(e -> {
            if (turn.tryFail(e)) {
                synchronized (this) {
                    queue.remove(turn);
                }
            }
        });
        return turn.future();
    }

    void release() {
        while (true) {
            Promise<Void> next;
            synchronized (this) {
                next = queue.poll();
                if (next == null) {
                    free++;
                    return;
                }
            }
            if (next.tryComplete()) {
                return;
            }
        }
    }
}
