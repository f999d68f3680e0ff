package io.delayq.bench;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import io.delayq.core.NewJob;
import io.delayq.dev.Resp;
import io.delayq.store.JobQueue;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.store.TakeResult;
import io.delayq.store.TakenJob;

/**
 * Scenario {@code rediscost} (issue 13): what Redis itself spends per job, by the script that
 * spends it, on a topic no replica serves (so nothing else runs scripts on it meanwhile):
 * <ul>
 * <li>single: N jobs enqueued one per call (4 threads, as a REST client's single POST /jobs
 * would) — Redis µs per enqueue script (INFO commandstats EVALSHA usec_per_call) and Redis
 * memory per scheduled job;
 * <li>batch: the same N jobs in calls of 1,000 — µs per script and per job, memory per job;
 * <li>take: N jobs due now taken 100 per call, each take carrying the previous take's acks (as
 * the taker does) — Redis µs per job taken and acked.
 * </ul>
 * Ids are the jobs' indexes and payloads 16 bytes, as in the other scenarios. Redis counts every
 * EVALSHA of the process, so the replica's own idle polls (about one a second) are included.
 */
final class RedisCostScenario {
    private static final String TOPIC = "bench-cost";
    private final JobQueue store;
    private final int n;

    RedisCostScenario(JobQueue store, int n) {
        this.store = store;
        this.n = n;
    }

    Map<String, Object> run() throws Exception {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "redis-cost");
        r.put("params", Map.of("n", n, "payload_b", BenchApp.PAYLOAD.length(), "batch", 1000, "take_limit", 100));
        long future = System.currentTimeMillis() + 3_600_000L;

        flush();
        RedisInfo before = RedisInfo.read();
        enqueueSingly(future);
        RedisInfo after = RedisInfo.read();
        r.put("single_usec_per_script", perScript(before, after));
        r.put("single_scripts_per_job", BenchApp.round((after.evalCalls() - before.evalCalls()) / (double) n, 3));
        r.put("single_mem_b_per_job", BenchApp.round((after.usedMemory() - before.usedMemory()) / (double) n, 1));

        flush();
        before = RedisInfo.read();
        enqueueBatches(future);
        after = RedisInfo.read();
        r.put("batch_usec_per_script", perScript(before, after));
        r.put("batch_usec_per_job", BenchApp.round((after.evalUsec() - before.evalUsec()) / (double) n, 2));
        r.put("batch_mem_b_per_job", BenchApp.round((after.usedMemory() - before.usedMemory()) / (double) n, 1));
        r.put("redis_mem_b_per_job", r.get("batch_mem_b_per_job"));

        flush();
        enqueueBatches(System.currentTimeMillis() - n - 1000); // every one due
        before = RedisInfo.read();
        int taken = takeAll();
        after = RedisInfo.read();
        r.put("take_usec_per_job", BenchApp.round((after.evalUsec() - before.evalUsec()) / (double) Math.max(1, taken), 2));
        r.put("take_usec_per_script", perScript(before, after));
        r.put("ok", taken == n);
        flush();
        return r;
    }

    private static double perScript(RedisInfo before, RedisInfo after) {
        return BenchApp.round((after.evalUsec() - before.evalUsec()) / (double) Math.max(1, after.evalCalls() - before.evalCalls()), 2);
    }

    private NewJob job(int i, long runAt) {
        return job(TOPIC, i, runAt);
    }

    private static NewJob job(String topic, int i, long runAt) {
        return new NewJob(topic, Integer.toString(i), false, runAt + i, 0, BenchApp.PAYLOAD);
    }

    private void enqueueSingly(long runAt) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            AtomicInteger next = new AtomicInteger();
            List<Future<?>> sent = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                sent.add(pool.submit(() -> {
                    for (int i = next.getAndIncrement(); i < n; i = next.getAndIncrement()) {
                        NewJob job = job(i, runAt);
                        store.enqueue(store.partitionOf(TOPIC, job.id()), List.of(job), "");
                    }
                }));
            }
            for (Future<?> f : sent) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
    }

    private void enqueueBatches(long runAt) {
        enqueueBatches(store, TOPIC, n, runAt);
    }

    /** N jobs of {@code topic}, job i due at runAt + i, in calls of 1,000. */
    static void enqueueBatches(JobQueue store, String topic, int n, long runAt) {
        for (int from = 0; from < n; from += 1000) {
            Map<Partition, List<NewJob>> byPartition = new LinkedHashMap<>();
            for (int i = from; i < Math.min(n, from + 1000); i++) {
                NewJob job = job(topic, i, runAt);
                byPartition.computeIfAbsent(store.partitionOf(topic, job.id()), k -> new ArrayList<>()).add(job);
            }
            byPartition.forEach((p, jobs) -> store.enqueue(p, jobs, ""));
        }
    }

    private int takeAll() {
        return takeAll(store, TOPIC);
    }

    /** Takes every job of the topic, 100 per call, acking each take's jobs with the next take (as the taker does). */
    static int takeAll(JobQueue store, String topic) {
        int taken = 0;
        for (Partition p : store.partitionsOf(topic)) {
            Set<Integer> older = new HashSet<>();
            List<Lease> acks = List.of();
            for (int call = 0;; call++) {
                TakeResult t = store.take(p, 100, 60_000, "cost" + call + ":", older, acks, 0);
                acks = t.jobs().stream().map(TakenJob::lease).toList();
                taken += acks.size();
                if (acks.isEmpty()) {
                    break;
                }
            }
        }
        return taken;
    }

    static void flush() throws InterruptedException {
        for (int port : RedisInfo.ports()) {
            try (Resp r = new Resp(port)) {
                r.call("FLUSHALL");
            }
        }
        Thread.sleep(200);
    }
}
