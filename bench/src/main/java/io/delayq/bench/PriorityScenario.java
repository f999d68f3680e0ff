package io.delayq.bench;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLongArray;

import io.delayq.core.IfExists;
import io.delayq.core.NewJob;
import io.delayq.store.JobQueue;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.store.TakeResult;
import io.delayq.store.TakenJob;

/**
 * Scenario {@code priority} (issue 33): what job priorities cost and what they buy, in one run.
 * <ul>
 * <li><b>burst</b>: the {@code burst} scenario's burst (N jobs, 50,000 by default, REST batches of
 * 1,000, all due 5 s after the enqueue starts, no-op observer, one replica) with no priority given
 * (every job priority 3: laid out exactly as by a release without priorities) and with mixed
 * priorities (job i priority 1 + i mod 5: a fifth in each lane), in {@code BENCH_PRIORITY_ROUNDS}
 * (3) rounds of both, the order alternating (none, mixed; mixed, none; ...) so that the JIT's
 * warming and the machine's load fall on both alike. Before them {@code BENCH_PRIORITY_WARMUP} (1)
 * pairs of the same bursts (mixed, none), reported as rows ({@code ...-warmup1}) but not counted: the
 * bench's own 2,000-job warm-up leaves the JIT cold for a 50,000-job burst, and a run without them
 * showed it (the first burst 23,600 jobs/s, the same burst 43,000 three bursts later), so the
 * medians compared a colder variant with a warmer one. Each burst is a row as {@code burst} measures
 * it; the summary compares the medians: throughput (target ≥ 0.9×), Redis CPU per job
 * ({@code used_cpu_sys + used_cpu_user} of the redis-server over enqueue, take and ack; ≤ 1.15×)
 * and Redis memory per scheduled job ({@code used_memory} after the enqueue, the target read without
 * the client connections' buffers, {@code mem_clients_normal}, both reported; ≤ 1.05×; only of the
 * bursts whose enqueue ended before their start, see {@link #whole}). That last one is N's as much
 * as the layout's: at 50,000 the five sorted sets of 10,000 are still rehashing their hash tables
 * after the burst (two tables each, +9.2 B per job) while the one of 50,000 has finished; at other
 * N it is the other way round (PriorityMemoryProbe, bench/RESULTS.md).
 * <li><b>take</b>: {@value #BACKLOG} priority-5 jobs due now on a topic no replica serves
 * ({@value #TAKE_TOPIC}), then {@value #TRIES} tries of: one priority-1 job enqueued due now, then
 * one take of {@value #TAKE_LIMIT} jobs (what a replica with the default concurrency asks for at
 * most) carrying the previous take's acks: whether the priority-1 job is in it and at which place,
 * and the take's round trip. This is the store's order exactly, without a replica's timing.
 * <li><b>backlog</b>: the same backlog on a topic this replica serves ({@value #TOPIC}), whose
 * observer works {@link #WORK_MS} ms per job ({@code BENCH_PRIORITY_WORK_MS}, 20), so that its 64
 * workers are always busy and the backlog stays due throughout (about 3,200 of the 100,000 taken
 * a second); {@value #TRIES} tries of one priority-1 job posted ({@code POST /jobs}), 20–70 ms
 * apart: its wait from just before the request to its observer's first line, p50/p99/max, and
 * the takes of the topic completed between the reply and its start (the take timer's count, read
 * by the observer). At most 2 (one under way when the reply came, and the next) means it started
 * within one take of its enqueue: a take that began after it was in Redis and took other jobs
 * would be a third. Meant for one partition (the bench's default): with more, the count is of
 * every partition's takes.
 * </ul>
 */
final class PriorityScenario {
    static final String TOPIC = "bench-prio";
    static final String TAKE_TOPIC = "bench-prio-take";
    static final int BACKLOG = 100_000;
    static final int TRIES = 100;
    static final int TAKE_LIMIT = 64;
    /** How long the served backlog's observer works per job (ms). */
    static final long WORK_MS = Long.parseLong(System.getenv().getOrDefault("BENCH_PRIORITY_WORK_MS", "20"));
    /** Takes of {@link #TOPIC} counted when each priority-1 job of the backlog part started (0: not yet). */
    private static volatile AtomicLongArray takesAtStart = new AtomicLongArray(0);

    private final BenchApp app;
    private final JobQueue queue;

    PriorityScenario(BenchApp app) {
        this.app = app;
        this.queue = app.queue;
    }

    /** Called by the observer of {@link #TOPIC} as a job starts: the priority-1 jobs' ids follow the backlog's. */
    static void started(String id, long takes) {
        int i = Integer.parseInt(id) - BACKLOG;
        AtomicLongArray at = takesAtStart;
        if (i >= 0 && i < at.length()) {
            at.compareAndSet(i, 0, takes);
        }
    }

    void run() throws Exception {
        burst();
        take();
        backlog();
    }

    private void burst() throws Exception {
        int rounds = Integer.parseInt(System.getenv().getOrDefault("BENCH_PRIORITY_ROUNDS", "3"));
        int warmUps = Integer.parseInt(System.getenv().getOrDefault("BENCH_PRIORITY_WARMUP", "1"));
        Map<Boolean, List<Map<String, Object>>> rows = new HashMap<>();
        for (int round = 1 - warmUps; round <= rounds; round++) {
            for (boolean mixed : Math.floorMod(round, 2) == 1 ? new boolean[] { false, true } : new boolean[] { true, false }) {
                app.mixedPriorities = mixed;
                app.pendingFields.put("priorities", mixed ? "mixed 1-5" : "none");
                String name = "prio-burst-" + (mixed ? "mixed-" : "none-") + (round < 1 ? "warmup" + (round + warmUps) : round);
                try {
                    app.schedule(name, "bench", app.o.n(), 0, app.o.start() * 1000L, true, true, 0);
                } finally {
                    app.mixedPriorities = false;
                }
                if (round >= 1) {
                    rows.computeIfAbsent(mixed, k -> new ArrayList<>()).add(app.results.get(app.results.size() - 1));
                }
            }
        }
        double jpsNone = median(rows.get(false), "throughput_jps"), jpsMixed = median(rows.get(true), "throughput_jps");
        double cpuNone = median(rows.get(false), "redis_cpu_ms_per_1k"), cpuMixed = median(rows.get(true), "redis_cpu_ms_per_1k");
        // Memory only from the bursts whose enqueue ended before their jobs came due: one that overran
        // was being taken and acked while it was still enqueued, so used_memory after the enqueue
        // counts a partly drained burst (seen: 161-169 B per job against 186).
        List<Map<String, Object>> memRowsNone = whole(rows.get(false)), memRowsMixed = whole(rows.get(true));
        double memNone = memRowsNone.isEmpty() ? Double.NaN : median(memRowsNone, "redis_mem_b_per_job");
        double memMixed = memRowsMixed.isEmpty() ? Double.NaN : median(memRowsMixed, "redis_mem_b_per_job");
        double dataNone = memRowsNone.isEmpty() ? Double.NaN : median(memRowsNone, "redis_mem_data_b_per_job");
        double dataMixed = memRowsMixed.isEmpty() ? Double.NaN : median(memRowsMixed, "redis_mem_data_b_per_job");
        double jpsRatio = jpsMixed / jpsNone, cpuRatio = cpuMixed / cpuNone, memRatio = memMixed / memNone;
        double dataRatio = dataMixed / dataNone;
        // The memory target is read on what Redis holds for the jobs: used_memory less the client
        // connections' buffers (mem_clients_normal: query buffers grown for the 1,000-job calls, the
        // same in both variants, shrunk by Redis after ~2 s idle, 0-5 B per job of noise); both shown.
        boolean met = jpsRatio >= 0.9 && cpuRatio <= 1.15 && dataRatio <= 1.05;
        boolean allOk = rows.values().stream().flatMap(List::stream).allMatch(r -> Boolean.TRUE.equals(r.get("ok")));
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "priority-burst");
        r.put("params", Map.of("n", app.o.n(), "rounds", rounds, "warmup_pairs", warmUps, "mixed", "job i priority 1 + i mod 5",
                "load_avg_1m", Stats.loadAverage()));
        r.put("ok", allOk);
        r.put("throughput_jps_none_mixed", List.of(Math.round(jpsNone), Math.round(jpsMixed)));
        r.put("throughput_ratio", BenchApp.round(jpsRatio, 3));
        // redis_cpu_ms_per_1k is µs per job.
        r.put("redis_cpu_us_per_job_none_mixed", List.of(cpuNone, cpuMixed));
        r.put("redis_cpu_ratio", BenchApp.round(cpuRatio, 3));
        r.put("redis_mem_b_per_job_none_mixed", Double.isNaN(memRatio) ? null : List.of(memNone, memMixed));
        r.put("redis_mem_bursts_none_mixed", List.of(memRowsNone.size(), memRowsMixed.size()));
        r.put("redis_mem_ratio", Double.isNaN(memRatio) ? null : BenchApp.round(memRatio, 3));
        r.put("redis_mem_data_b_per_job_none_mixed", Double.isNaN(dataRatio) ? null : List.of(dataNone, dataMixed));
        r.put("redis_mem_data_ratio", Double.isNaN(dataRatio) ? null : BenchApp.round(dataRatio, 3));
        r.put("summary", String.format("burst of %d, mixed priorities / none, medians of %d rounds: throughput %d / %d"
                + " jobs/s = %.3fx, Redis CPU %.2f / %.2f µs per job = %.3fx, Redis memory %.1f / %.1f B per job = %.3fx"
                + " (medians of the %d / %d bursts whose enqueue did not overrun their start; without the connections'"
                + " buffers %.1f / %.1f = %.3fx); load average %.2f", app.o.n(), rounds, Math.round(jpsMixed),
                Math.round(jpsNone), jpsRatio, cpuMixed, cpuNone, cpuRatio, memMixed, memNone, memRatio, memRowsMixed.size(),
                memRowsNone.size(), dataMixed, dataNone, dataRatio, Stats.loadAverage()));
        r.put("target", "throughput >= 0.9x, Redis CPU per job <= 1.15x, memory per job (without the connections' buffers) <= 1.05x");
        r.put("target_met", met);
        app.emit(r);
    }

    /** The bursts whose enqueue ended before their jobs came due. */
    private static List<Map<String, Object>> whole(List<Map<String, Object>> rows) {
        return rows.stream().filter(r -> !Boolean.TRUE.equals(r.get("enqueue_overran"))).toList();
    }

    private static double median(List<Map<String, Object>> rows, String field) {
        return Stats.median(rows.stream().map(r -> ((Number) r.get(field)).doubleValue()).toList());
    }

    /** N priority-5 jobs due now on a topic, ids "0".."N-1", in calls of 1,000 per partition. */
    private void fill(String topic) {
        for (int from = 0; from < BACKLOG; from += 1000) {
            Map<Partition, List<NewJob>> byPartition = new LinkedHashMap<>();
            for (int i = from; i < Math.min(BACKLOG, from + 1000); i++) {
                String id = Integer.toString(i);
                byPartition.computeIfAbsent(queue.partitionOf(topic, id), k -> new ArrayList<>()).add(job(topic, id, 5));
            }
            byPartition.forEach((p, jobs) -> queue.enqueue(p, jobs, ""));
        }
    }

    /** A job due at Redis' now. */
    private static NewJob job(String topic, String id, int priority) {
        return new NewJob(topic, id, true, 0, 0, BenchApp.PAYLOAD, IfExists.KEEP, null, null, null, null, priority);
    }

    private void take() throws Exception {
        app.flush();
        fill(TAKE_TOPIC);
        Map<Partition, Set<Integer>> older = new HashMap<>();
        Map<Partition, List<Lease>> acks = new HashMap<>();
        int inFirst = 0, first = 0, taken = 0;
        long[] rttUs = new long[TRIES];
        for (int k = 0; k < TRIES; k++) {
            String id = Integer.toString(BACKLOG + k);
            Partition p = queue.partitionOf(TAKE_TOPIC, id);
            queue.enqueue(p, List.of(job(TAKE_TOPIC, id, 1)), "");
            long t0 = System.nanoTime();
            TakeResult t = queue.take(p, TAKE_LIMIT, 60_000, "prio" + k + ":",
                    older.computeIfAbsent(p, x -> new HashSet<>()), acks.getOrDefault(p, List.of()), 0);
            rttUs[k] = (System.nanoTime() - t0) / 1000;
            acks.put(p, t.jobs().stream().map(TakenJob::lease).toList());
            taken += t.jobs().size();
            List<String> ids = t.jobs().stream().map(j -> j.lease().id()).toList();
            if (ids.contains(id)) {
                inFirst++;
                first += ids.indexOf(id) == 0 ? 1 : 0;
            }
        }
        long left = app.jobsInRedis(TAKE_TOPIC);
        app.flush();
        long[] sorted = Stats.sorted(rttUs, TRIES);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "priority-take");
        r.put("params", Map.of("backlog_priority5_due", BACKLOG, "tries", TRIES, "take_limit", TAKE_LIMIT,
                "load_avg_1m", Stats.loadAverage()));
        r.put("ok", inFirst == TRIES);
        r.put("in_the_next_take", inFirst);
        r.put("first_of_that_take", first);
        r.put("jobs_taken", taken);
        r.put("jobs_left_after", left);
        r.put("take_rtt_us", Report.latency(sorted));
        r.put("summary", String.format("%d priority-5 jobs due, a priority-1 job enqueued then one take of %d: in that take"
                + " %d of %d tries (first of it %d); take round trip p50 %d / p99 %d µs", BACKLOG, TAKE_LIMIT, inFirst, TRIES,
                first, Stats.percentile(sorted, 50), Stats.percentile(sorted, 99)));
        r.put("target", "in the next take, every try");
        r.put("target_met", inFirst == TRIES);
        app.emit(r);
    }

    private void backlog() throws Exception {
        app.flush();
        app.control.pause(TOPIC);
        app.recorder.reset(BACKLOG + TRIES);
        takesAtStart = new AtomicLongArray(TRIES);
        fill(TOPIC);
        app.control.resume(TOPIC);
        // Until every worker is busy with the backlog.
        long settle = System.currentTimeMillis() + 2000;
        while (System.currentTimeMillis() < settle) {
            Thread.sleep(50);
        }
        long[] waits = new long[TRIES];
        long[] takes = new long[TRIES];
        int withinOne = 0, started = 0;
        long load0 = app.recorder.distinct();
        long t0 = System.currentTimeMillis();
        for (int k = 0; k < TRIES; k++) {
            int i = BACKLOG + k;
            String body = "{\"topic\":\"" + TOPIC + "\",\"id\":\"" + i + "\",\"payload\":" + BenchApp.PAYLOAD
                    + ",\"priority\":1}";
            long sent = System.currentTimeMillis();
            HttpResponse<String> reply = app.http.send(HttpRequest.newBuilder(URI.create(app.base + "/jobs"))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                    HttpResponse.BodyHandlers.ofString());
            long takesAtReply = app.metrics.takeTimer(TOPIC).count();
            if (reply.statusCode() != 201) {
                throw new IllegalStateException("POST /jobs answered " + reply.statusCode() + " " + reply.body());
            }
            long deadline = System.currentTimeMillis() + 30_000;
            while (app.recorder.first(i) == 0 && System.currentTimeMillis() < deadline) {
                Thread.sleep(1);
            }
            if (app.recorder.first(i) > 0) {
                waits[started++] = app.recorder.first(i) - sent;
                // 0 when it started before the reply was read.
                takes[k] = Math.max(0, takesAtStart.get(k) - takesAtReply);
                withinOne += takes[k] <= 2 ? 1 : 0;
            }
            // Apart by a random gap: the tries do not fall in step with the takes.
            Thread.sleep(20 + ThreadLocalRandom.current().nextInt(51));
        }
        double seconds = (System.currentTimeMillis() - t0) / 1000.0;
        long backlogTaken = app.recorder.distinct() - load0 - started;
        long left = app.jobsInRedis(TOPIC);
        app.control.pause(TOPIC);
        long quiet = System.currentTimeMillis() + 10_000;
        while (inflight() > 0 && System.currentTimeMillis() < quiet) {
            Thread.sleep(20);
        }
        app.flush();
        app.control.resume(TOPIC);

        long[] sorted = Stats.sorted(waits, started);
        long[] takesSorted = Stats.sorted(takes, TRIES);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "priority-backlog");
        r.put("params", Map.of("backlog_priority5_due", BACKLOG, "tries", TRIES, "work_ms", WORK_MS, "concurrency", 64,
                "enqueue", "POST /jobs", "load_avg_1m", Stats.loadAverage()));
        r.put("ok", started == TRIES && app.recorder.duplicates() == 0 && left > 0);
        r.put("started", started);
        r.put("wait_ms", Report.latency(sorted));
        r.put("takes_between_reply_and_start", Report.latency(takesSorted));
        r.put("within_one_take", withinOne);
        r.put("backlog_jobs_started_meanwhile", backlogTaken);
        r.put("backlog_jobs_per_s", Math.round(backlogTaken / seconds));
        r.put("jobs_left_after", left);
        r.put("dup", app.recorder.duplicates());
        r.put("summary", String.format("%d priority-5 jobs due, workers busy (%d ms a job, %d backlog jobs/s): a priority-1"
                + " job's wait from POST to start p50 %d / p99 %d / max %d ms over %d tries; within one take %d of %d (takes"
                + " completed between reply and start: max %d); %d jobs still scheduled after", BACKLOG, WORK_MS,
                Math.round(backlogTaken / seconds), Stats.percentile(sorted, 50), Stats.percentile(sorted, 99),
                sorted.length == 0 ? -1 : sorted[sorted.length - 1], started, withinOne, TRIES,
                takesSorted[takesSorted.length - 1], left));
        r.put("target", "started within one take, every try");
        r.put("target_met", withinOne == TRIES);
        app.emit(r);
    }

    private long inflight() {
        return app.store.topics().stream().filter(t -> t.topic().equals(TOPIC)).mapToLong(t -> t.inflight()).sum();
    }
}
