package io.delayq.store;

/** Counts of one topic over all its partitions; {@code nextDue} -1 when nothing is scheduled. */
public record TopicStats(String topic, long scheduled, long inflight, long dead, long nextDue) {
}
