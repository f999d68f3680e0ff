package io.delayq.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.delayq.store.JobListing;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;

/**
 * Scenario {@code listing} (issue 32): what Redis spends on one page of {@code GET /topics/{t}/jobs}
 * from a big topic. N jobs (default of the run's --n; the figure is for 5,000,000) are
 * enqueued in batches of 1,000 on a topic no replica serves, spread over 30 days, 10 per runAt (ties
 * in every shard); then pages of 1,000 jobs are read through {@link JobListing} (the REST listing's
 * store call): the first page, 20 pages following the cursor from a point in the middle (the
 * cursor's position met again by a binary search among ties), and a filtered listing that matches
 * 1 job in 100 (each call examining its full 1,000 entries). Redis time is INFO commandstats'
 * EVALSHA usec summed over the call's scripts (one per partition); the target is ≤ 50 ms a page.
 */
final class ListingScenario {
    private static final String TOPIC = "bench-list";
    private static final long DAYS_MS = 30 * 86_400_000L;
    private final BenchApp app;
    private final JobQueue store;
    private final JobListing listing;
    private final int n;

    ListingScenario(BenchApp app, JobQueue store, JobListing listing, int n) {
        this.app = app;
        this.store = store;
        this.listing = listing;
        this.n = n;
    }

    Map<String, Object> run() throws Exception {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "listing");
        r.put("params", Map.of("n", n, "page", 1000, "payload_b", BenchApp.PAYLOAD.length()));
        app.flush();
        long start = System.currentTimeMillis() + 3_600_000L;
        long t0 = System.nanoTime();
        enqueue(start);
        r.put("enqueue_s", BenchApp.round((System.nanoTime() - t0) / 1e9, 1));
        r.put("redis_used_memory_mb", RedisInfo.read().usedMemory() / 1_000_000);

        List<Double> first = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            first.add(page(JobListing.Filter.ALL, null)[0]);
        }
        // From the middle of the topic: a page bounded below by a runAt there, then 20 pages by cursor.
        JobListing.Filter middle = new JobListing.Filter(null, null, start + DAYS_MS / 2, null);
        List<Double> following = new ArrayList<>();
        String cursor = null;
        int jobs = 0;
        for (int i = 0; i < 21; i++) {
            double[] p = page(middle, cursor);
            if (i > 0) {
                following.add(p[0]);
            }
            jobs += (int) p[1];
            cursor = last;
        }
        List<Double> filtered = new ArrayList<>();
        JobListing.Filter rare = new JobListing.Filter("7", null, null, null); // ids 7, 70..79, 700..: about 1 %
        cursor = null;
        for (int i = 0; i < 10; i++) {
            filtered.add(page(rare, cursor)[0]);
            cursor = last;
        }
        r.put("first_page_redis_ms", stats(first));
        r.put("cursor_page_redis_ms", stats(following));
        r.put("filtered_call_redis_ms", stats(filtered));
        r.put("cursor_pages_jobs", jobs);
        double worst = Math.max(max(first), max(following));
        r.put("page_redis_ms_max", BenchApp.round(worst, 2));
        r.put("ok", worst <= 50 && jobs == 21 * 1000);
        app.flush();
        return r;
    }

    private String last;

    /** One page of 1,000: {Redis ms of its scripts, jobs on it}; its cursor in {@link #last}. */
    private double[] page(JobListing.Filter f, String cursor) {
        RedisInfo before = RedisInfo.read();
        JobListing.Page p = listing.list(TOPIC, JobState.SCHEDULED, f, 1000, false, cursor);
        RedisInfo after = RedisInfo.read();
        last = p.cursor();
        return new double[] { (after.evalUsec() - before.evalUsec()) / 1000.0, p.jobs().size() };
    }

    private void enqueue(long start) {
        for (int from = 0; from < n; from += 1000) {
            Map<Partition, List<NewJob>> byPartition = new LinkedHashMap<>();
            for (int i = from; i < Math.min(n, from + 1000); i++) {
                NewJob job = new NewJob(TOPIC, Integer.toString(i), false, start + (i / 10) * (DAYS_MS / (n / 10 + 1)), 0,
                        BenchApp.PAYLOAD);
                byPartition.computeIfAbsent(store.partitionOf(TOPIC, job.id()), k -> new ArrayList<>()).add(job);
            }
            byPartition.forEach((p, jobs) -> store.enqueue(p, jobs, ""));
        }
    }

    private static Map<String, Double> stats(List<Double> ms) {
        List<Double> s = new ArrayList<>(ms);
        s.sort(null);
        return Map.of("p50", BenchApp.round(s.get(s.size() / 2), 2), "max", BenchApp.round(s.get(s.size() - 1), 2));
    }

    private static double max(List<Double> ms) {
        return ms.stream().mapToDouble(Double::doubleValue).max().orElse(0);
    }
}
