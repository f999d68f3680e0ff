package io.delayq.store;

import java.util.List;

/**
 * @param now Redis time of the take (ms)
 * @param nextDue earliest runAt still scheduled in the partition, -1 when none
 * @param staleAcks ids of the acks carried by the take whose lease was no longer ours
 * @param notBefore flow control: -1 while the topic is paused (nothing was taken); else the Redis
 *        time (ms) before which the topic's rate limit lets no take of the partition have a job, 0
 *        when the limit held nothing back (or there is none)
 */
public record TakeResult(long now, long nextDue, List<TakenJob> jobs, List<String> staleAcks, long notBefore) {

    /** The topic is paused: nothing is taken until it is resumed (which publishes a wake-up). */
    public boolean paused() {
        return notBefore < 0;
    }
}
