package io.delayq.store;

import java.util.List;

/**
 * @param now Redis time of the take (ms)
 * @param nextDue earliest runAt still scheduled in the partition, -1 when none
 * @param staleAcks ids of the acks carried by the take whose lease was no longer ours
 * @param notBefore flow control: -1 while the topic is paused (nothing was taken); -2 when the
 *        concurrency cap held the take back while jobs are still due; else the Redis
 *        time (ms) before which the topic's rate limit lets no take of the partition have a job, 0
 *        when the limit held nothing back (or there is none); the end of the hold while the topic is held
 * @param heldUntil the Redis time (ms) until which the topic is held (its HTTP target answered 429
 *        or 503 with {@code Retry-After}): nothing was taken, and no take before it would have a
 *        job, whatever wakes the taker; 0 when it is not held
 */
public record TakeResult(long now, long nextDue, List<TakenJob> jobs, List<String> staleAcks, long notBefore,
        long heldUntil) {

    /** The topic is paused: nothing is taken until it is resumed (which publishes a wake-up). */
    public boolean paused() {
        return notBefore == -1;
    }

    /**
     * The topic's concurrency cap held the take back while jobs are still due: no take has one
     * until a job of the partition ends, and the step that ends it publishes a wake-up.
     */
    public boolean capped() {
        return notBefore == -2;
    }
}
