package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.Test;

import io.vertx.core.Future;

/** The turns of the enqueues that wait for Redis replicas: a semaphore whose waiters hold no thread. */
class TurnsTest {

    private static void await(Future<Void> turn) throws Exception {
        turn.toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    @Test
    void aWaiterGetsTheTurnReleasedBeforeItsWaitIsUpAndGivesUpAfter() throws Exception {
        Turns turns = new Turns(1);
        await(turns.acquire(1000));
        Future<Void> second = turns.acquire(60_000);
        assertFalse(second.isComplete(), "no turn free");
        turns.release();
        await(second);

        Future<Void> impatient = turns.acquire(50);
        ExecutionException e = assertThrows(ExecutionException.class, () -> await(impatient));
        assertInstanceOf(TimeoutException.class, e.getCause());
        // The release skips the waiter that gave up: the turn is free for the next caller at once.
        turns.release();
        Future<Void> next = turns.acquire(1000);
        assertTrue(next.succeeded(), "the turn went to a waiter that had given up");
    }
}
