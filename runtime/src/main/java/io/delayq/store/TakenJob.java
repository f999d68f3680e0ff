package io.delayq.store;

/** A job leased by {@code take}: ready to be handed to an observer. */
public record TakenJob(Partition partition, Lease lease, JobRecord record) {
}
