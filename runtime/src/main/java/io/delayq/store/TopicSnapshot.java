package io.delayq.store;

import java.util.List;

/**
 * A topic as the dashboard shows it, summed over its partitions (each read atomically): its
 * counts, jobs due now and the oldest of them, a timeline of what falls due next, the next jobs
 * and the jobs in flight.
 *
 * @param redisNowMs Redis time of the read
 * @param scheduled jobs waiting in the day shards
 * @param dueNow scheduled jobs whose runAt has passed and that no replica has taken
 * @param oldestDueMs runAt of the oldest of them, -1 when none
 * @param inflightCount jobs in flight
 * @param dead jobs in the dead set
 * @param timeline jobs falling due in each bucket from now on
 * @param next the next jobs by runAt (due ones first), at most the limit asked
 * @param inflight jobs in flight, soonest lease deadline first, at most the limit asked
 */
public record TopicSnapshot(long redisNowMs, long scheduled, long dueNow, long oldestDueMs, long inflightCount, long dead,
        long[] timeline,
        List<Scheduled> next, List<Running> inflight, long heldCount, List<Held> held) {

    /** A scheduled job; {@code record} is null if it went between the two reads of a partition. */
    public record Scheduled(String id, long runAtMs, JobRecord record) {
    }

    /** A job in flight: {@code holder} is the replica id its lease token starts with. */
    /** A job its group holds back (scheduled, in no day shard), with its group and runAt. */
    public record Held(String id, long runAtMs, String group, JobRecord record) {
    }

    /** {@code cancelling}: its cancel was asked, its attempt is being ended (see cancel.lua). */
    public record Running(String id, long leaseDeadlineMs, String holder, JobRecord record, boolean cancelling) {
        public Running(String id, long leaseDeadlineMs, String holder, JobRecord record) {
            this(id, leaseDeadlineMs, holder, record, false);
        }
    }
}
