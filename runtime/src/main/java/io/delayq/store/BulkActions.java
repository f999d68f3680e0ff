package io.delayq.store;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import io.vertx.redis.client.Response;

/**
 * Cancel or reschedule every scheduled job of a topic that matches a filter
 * ({@code POST /topics/{t}/jobs/cancel}, {@code /reschedule}): each partition's jobs hash walked
 * once with an HSCAN cursor, {@link #STEP} fields per {@code bulk.lua} call, each call atomic and
 * short so that Redis serves takes and acks between them. A job is acted on when the walk reaches
 * it, if it is scheduled and matches then (jobs enqueued meanwhile may or may not be); none twice.
 * Kept apart from the job path, as {@link JobListing} is.
 */
@Singleton
public class BulkActions extends StorePart {
    /** Fields of a partition's jobs hash one call examines (HSCAN COUNT, a hint Redis follows closely). */
    public static final int STEP = 200;

    @Inject
    public BulkActions(StoreLayer layer) {
        super(layer);
    }

    /** Cancels the matching scheduled jobs; returns how many. */
    public long cancel(String topic, JobListing.Filter filter) {
        return walk(topic, "c", filter, 0);
    }

    /**
     * Moves the matching scheduled jobs to {@code ms} after Redis now, read once at the start
     * ({@code delayed}), or to epoch ms {@code ms}; returns how many moved (one already there is
     * not counted).
     */
    public long reschedule(String topic, JobListing.Filter filter, boolean delayed, long ms) {
        return walk(topic, "r", filter, delayed ? redisTimeMs() + ms : ms);
    }

    private long walk(String topic, String mode, JobListing.Filter f, long runAt) {
        ensureLayout();
        long acted = 0;
        for (Partition p : partitionsOf(topic)) {
            // The shards learned from DQNEEDDAY stay in the set for the partition's next steps.
            Set<Integer> days = new TreeSet<>(aroundNow());
            if (mode.equals("r")) {
                aroundDay(days, runAt);
            }
            String cursor = "0";
            do {
                // With the result retention's keys: a job cancelled takes the kept success of an
                // earlier job of its id with it (lib.lua's cancel_scheduled).
                Response r = redis.await(runAsync("bulk", p, days, List.of(mode, cursor, Integer.toString(STEP),
                        JobListing.text(f.idPrefix()), JobListing.text(f.group()), JobListing.text(f.from()),
                        JobListing.text(f.to()), Long.toString(runAt), scriptChannel(p), layer.burial(p)), 0, null,
                        false, layer.results().keeps(p.topic())));
                cursor = r.get(0).toString();
                acted += r.get(1).toLong();
                // Those rescheduled after their expiresAt went to the dead set instead.
                int expired = r.size() > 2 ? r.get(2).toInteger() : 0;
                if (expired > 0) {
                    layer.expired(p, expired);
                    layer.calledBack(p);
                    List<String> trimmed = new java.util.ArrayList<>(r.get(3).size());
                    r.get(3).forEach(t -> trimmed.add(t.toString()));
                    layer.trimmed(p, trimmed);
                }
            } while (!cursor.equals("0"));
        }
        return acted;
    }
}
