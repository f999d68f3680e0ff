package io.delayq.store;

import java.util.List;

/**
 * @param now Redis time of the take (ms)
 * @param nextDue earliest runAt still scheduled in the partition, -1 when none
 * @param staleAcks ids of the acks carried by the take whose lease was no longer ours
 */
public record TakeResult(long now, long nextDue, List<TakenJob> jobs, List<String> staleAcks) {
}
