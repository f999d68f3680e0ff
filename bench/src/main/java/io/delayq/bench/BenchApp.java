package io.delayq.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import jakarta.inject.Inject;

import org.eclipse.microprofile.config.ConfigProvider;

import io.delayq.core.Jobs;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;
import io.delayq.ops.DelayqMetrics;
import io.delayq.store.Inspection;
import io.delayq.store.JobQueue;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import io.quarkus.runtime.QuarkusApplication;

/**
 * The scenarios. Schedules follow the peers harness (../shared/bench/peers): job i of N is due at
 * t0 + floor(i * window / N) (burst: all at t0), t0 = enqueue start + start; lateness = first
 * observer start − due(i), nearest-rank percentiles; Redis commands from total_commands_processed
 * (script internals included) less our INFO calls; Redis CPU from used_cpu_sys + used_cpu_user.
 */
public class BenchApp implements QuarkusApplication {
    /** The topics scenario's in-process receiver; null when it was not asked for. */
    static HttpSink sink;
    /** 16 bytes of JSON, the peers' --payload 16. */
    static final String PAYLOAD = "\"xxxxxxxxxxxxxx\"";

    @Inject
    Jobs jobs;
    @Inject
    Inspection store;
    @Inject
    JobQueue queue;
    @Inject
    io.delayq.store.JobListing listing;
    @Inject
    Recorder recorder;
    @Inject
    io.delayq.core.TopicControl control;
    @Inject
    DelayqMetrics metrics;
    @Inject
    io.delayq.store.HistoryStore history;
    @Inject
    io.delayq.store.RedisClock redisClock;
    @Inject
    io.delayq.ops.HistoryRecorder historyRecorder;
    @Inject
    io.delayq.store.RedisGateway gateway;
    @Inject
    io.delayq.store.Keys keys;
    @Inject
    io.delayq.core.DelayqConfig config;

    final List<Map<String, Object>> results = new ArrayList<>();
    /** Fields the next emitted line gets in addition (the backlog's size). */
    final Map<String, Object> pendingFields = new LinkedHashMap<>();
    final HttpClient http = HttpClient.newHttpClient();
    String base;
    Options o;

    record Options(List<String> scenarios, int n, int window, int start, int idleS, int small, int big, boolean smoke,
            int rounds) {
        static Options parse(String... args) {
            List<String> scenarios = new ArrayList<>();
            Map<String, String> opts = new LinkedHashMap<>();
            for (int i = 0; i < args.length; i++) {
                if (args[i].startsWith("--")) {
                    opts.put(args[i].substring(2), i + 1 < args.length ? args[++i] : "");
                } else {
                    scenarios.addAll(List.of(args[i].split(",")));
                }
            }
            boolean smoke = scenarios.remove("smoke");
            if (smoke) {
                scenarios.addAll(List.of("spread", "burst", "idle", "backlog", "http", "wrk", "topics"));
            }
            if (scenarios.isEmpty() || scenarios.remove("all")) {
                scenarios.addAll(List.of("steady500", "spread", "spread200k", "burst", "idle", "backlog", "replicas", "http", "h2c", "wrk"));
            }
            int n = Integer.parseInt(opts.getOrDefault("n", smoke ? "300" : "50000"));
            return new Options(scenarios, n, Integer.parseInt(opts.getOrDefault("window", smoke ? "2" : "10")),
                    Integer.parseInt(opts.getOrDefault("start", smoke ? "2" : "5")),
                    Integer.parseInt(opts.getOrDefault("idle-s", smoke ? "2" : "10")),
                    Integer.parseInt(opts.getOrDefault("small", smoke ? "100" : "10000")),
                    Integer.parseInt(opts.getOrDefault("big", smoke ? "1000" : "5000000")), smoke,
                    Integer.parseInt(opts.getOrDefault("rounds", "6")));
        }
    }

    @Override
    public int run(String... args) throws Exception {
        o = Options.parse(args);
        if (sink != null) {
            sink.recorder = recorder;
        }
        base = "http://127.0.0.1:" + ConfigProvider.getConfig().getValue("quarkus.http.port", Integer.class);
        System.err.printf("delayq bench: scenarios %s, Redis pid %s, %d cores%n", o.scenarios(),
                System.getProperty("bench.redis.pid"), Runtime.getRuntime().availableProcessors());
        // A cold scenario is the first thing this JVM runs: no warm-up before it.
        if (o.scenarios().isEmpty() || !o.scenarios().get(0).endsWith("-cold")) {
            warmUp();
        }
        for (String s : o.scenarios()) {
            switch (s) {
                // What a user sees first (a fresh JVM, classes loading and the JIT compiling during
                // the run), then the same scenario again in the same JVM after a warm-up.
                case "burst-cold", "spread-cold" -> {
                    boolean burst = s.startsWith("burst");
                    String kind = burst ? "burst" : "spread";
                    schedule(kind + "-cold", "bench", o.n(), burst ? 0 : o.window() * 1000L, o.start() * 1000L, burst, true, 0);
                    warmUp();
                    schedule(kind + "-warm", "bench", o.n(), burst ? 0 : o.window() * 1000L, o.start() * 1000L, burst, true, 0);
                }
                case "spread" -> schedule("spread", "bench", o.n(), o.window() * 1000L, o.start() * 1000L, false, true, 0);
                case "steady500" -> schedule("spread-500/s", "bench", 5000, 10_000, o.start() * 1000L, false, true, 0);
                case "spread200k" -> schedule("spread-200k", "bench", 200_000, 10_000, 10_000, false, false, 0);
                case "burst" -> schedule("burst", "bench", o.n(), 0, o.start() * 1000L, true, true, 0);
                case "idle" -> idle();
                case "backlog" -> {
                    backlog("backlog-small", "bench-small", o.small());
                    backlog("backlog-big", "bench-big", o.big());
                }
                case "replicas" -> {
                    for (int r = 1; r <= 3; r++) {
                        schedule("burst-" + r + "-replicas", "bench", o.n(), 0, o.start() * 1000L, true, false, r - 1);
                    }
                }
                case "dedup" -> dedup();
                case "http" -> new HttpScenario(this).run("bench-http", "http/1.1");
                case "h2c" -> new HttpScenario(this).run("bench-h2c", "h2c");
                case "wrk" -> new WrkScenario(this).run();
                case "server-cold" -> new ServerColdScenario(this).run();
                case "bodies" -> new BodiesScenario(this).run();
                case "rediscost" -> emit(new RedisCostScenario(queue, o.n()).run());
                case "cancel" -> new CancelScenario(this, 200).run();
                case "markcost" -> emit(new MarkCostScenario(queue, MarkCostScenario.storeOf(MarkCostScenario.BASE, gateway, keys,
                        config), o.n(), o.rounds()).run());
                case "listing" -> emit(new ListingScenario(this, queue, listing, o.n()).run());
                case "topics" -> new TopicsScenario(this).run();
                case "flow" -> new FlowScenario(this, control).run();
                case "grouprate" -> new GroupRateScenario(this).run();
                case "priority" -> new PriorityScenario(this).run();
                case "history" -> history();
                case "results" -> results();
                default -> throw new IllegalArgumentException("unknown scenario " + s);
            }
        }
        Report.table(results);
        return results.stream().allMatch(r -> Boolean.TRUE.equals(r.get("ok"))) ? 0 : 1;
    }

    /** The first jobs of a fresh JVM load classes; keep that out of the measurements. */
    private void warmUp() throws Exception {
        recorder.reset(0);
        long now = System.currentTimeMillis();
        List<NewJob> warm = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            warm.add(new NewJob("bench", "w" + i, false, now, 0, PAYLOAD));
        }
        jobs.scheduleAll(warm);
        postBatch(List.of(new NewJob("bench", "w-rest", false, now, 0, PAYLOAD)), "bench");
        while (jobsInRedis("bench") > 0) {
            Thread.sleep(50);
        }
    }

    /** Empties Redis; ASYNC because the backlog run leaves millions of jobs, then waits until freed. */
    void flush() throws InterruptedException {
        for (int port : RedisInfo.ports()) {
            try (Resp r = new Resp(port)) {
                r.call("FLUSHALL", "ASYNC");
                while (!r.str("INFO", "memory").contains("lazyfree_pending_objects:0")) {
                    Thread.sleep(100);
                }
            }
        }
        Thread.sleep(300);
    }

    /** Jobs of a topic in Redis (scheduled, in flight or dead), over all its partitions. */
    long jobsInRedis(String topic) {
        return store.topics().stream().filter(t -> t.topic().equals(topic))
                .mapToLong(t -> t.scheduled() + t.inflight() + t.dead()).sum();
    }

    private long due(int i, int n, long t0, long windowMs, boolean burst) {
        return burst ? t0 : t0 + (long) Math.floor((double) i * windowMs / n);
    }

    /** Runs one schedule of N jobs on a topic and measures it; {@code extra} replica processes join. */
    void schedule(String name, String topic, int n, long windowMs, long startMs, boolean burst, boolean viaRest, int extra)
            throws Exception {
        flush();
        measure(name, topic, n, windowMs, startMs, burst, viaRest, extra);
    }

    /** {@link #schedule} on Redis as it is (the backlog scenario fills it first). */
    void measure(String name, String topic, int n, long windowMs, long startMs, boolean burst, boolean viaRest, int extra)
            throws Exception {
        long backlogJobs = jobsInRedis(topic);
        List<Replica> replicas = new ArrayList<>();
        for (int r = 0; r < extra; r++) {
            replicas.add(Replica.start(r));
        }
        recorder.reset(n);
        double selfCpu0 = Stats.selfCpuSeconds();
        double replicaCpu0 = replicas.stream().mapToDouble(Replica::cpu).sum();
        RedisInfo before = RedisInfo.read();
        long enqueueStart = System.currentTimeMillis();
        long t0 = enqueueStart + startMs;
        enqueue(topic, n, i -> due(i, n, t0, windowMs, burst), viaRest);
        long enqueueEnd = System.currentTimeMillis();
        RedisInfo enqueued = RedisInfo.read();
        double selfCpuAtT0 = 0;
        while (System.currentTimeMillis() < t0) {
            Thread.sleep(Math.max(1, Math.min(50, t0 - System.currentTimeMillis())));
        }
        selfCpuAtT0 = Stats.selfCpuSeconds();
        String stop = awaitDone(n, due(n - 1, n, t0, windowMs, burst), replicas);
        RedisInfo after = RedisInfo.read();
        double selfCpu = Stats.selfCpuSeconds();
        long leftInRedis = jobsInRedis(topic);
        double replicaCpu = replicas.stream().mapToDouble(Replica::cpu).sum() - replicaCpu0;
        replicas.forEach(Replica::stop);

        long[] late = new long[n];
        int processed = 0;
        long last = 0;
        for (int i = 0; i < n; i++) {
            long f = recorder.first(i);
            if (f > 0) {
                late[processed++] = f - due(i, n, t0, windowMs, burst);
                last = Math.max(last, f);
            }
        }
        long[] sorted = Stats.sorted(late, processed);
        int early = 0;
        while (early < processed && sorted[early] < 0) {
            early++;
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", name);
        r.put("params", Map.of("n", n, "window_s", windowMs / 1000.0, "start_s", startMs / 1000.0, "burst", burst,
                "replicas", 1 + extra, "enqueue_via", viaRest ? "rest-batch-1000" : "java-api-1000", "payload_b", PAYLOAD.length()));
        r.put("ok", processed == n && recorder.duplicates() == 0 && enqueueEnd <= t0 && leftInRedis == backlogJobs);
        r.put("stop_reason", stop);
        r.put("enqueue_jps", Math.round(n / Math.max(0.001, (enqueueEnd - enqueueStart) / 1000.0)));
        r.put("enqueue_overran", enqueueEnd > t0);
        r.put("processed", processed);
        r.put("lost", n - processed);
        r.put("left_in_redis", leftInRedis - backlogJobs); // jobs not acked when the run ended
        r.put("dup", recorder.duplicates());
        r.put("early", early);
        r.put("late_ms", Report.latency(sorted));
        r.put("throughput_jps", Math.round(processed / Math.max(0.001, (last - t0) / 1000.0)));
        r.put("drain_s", (last - due(n - 1, n, t0, windowMs, burst)) / 1000.0);
        r.put("redis_cmds_per_job", round(after.commandsSince(before, 2) / (double) n, 2));
        r.put("redis_scripts_per_job", round((after.evalCalls() - before.evalCalls()) / (double) n, 3));
        r.put("redis_usec_per_script", round((after.evalUsec() - before.evalUsec())
                / (double) Math.max(1, after.evalCalls() - before.evalCalls()), 1));
        r.put("redis_cpu_ms_per_1k", round((after.cpuSeconds() - before.cpuSeconds()) * 1e6 / n, 1));
        r.put("redis_script_usec_per_job", round((after.evalUsec() - before.evalUsec()) / (double) n, 2));
        if (after.nodes() > 1) {
            double[] cpu = after.cpuByNodeSince(before);
            List<Double> perMaster = new ArrayList<>();
            double max = 0, min = Double.MAX_VALUE;
            for (double c : cpu) {
                perMaster.add(round(c * 1e6 / n, 1));
                max = Math.max(max, c);
                min = Math.min(min, c);
            }
            r.put("redis_cpu_ms_per_1k_by_master", perMaster);
            r.put("redis_cpu_balance_max_min", round(max / Math.max(1e-9, min), 2));
        }
        r.put("redis_mem_b_per_job", round((enqueued.usedMemory() - before.usedMemory()) / (double) n, 1));
        // The same without the connections' buffers: read right after the last batch's reply, the
        // query buffers grown for those 1,000-job calls are in used_memory, 0-5 B per job of a
        // 50,000-job burst, until Redis shrinks them after ~2 s idle (PriorityMemoryProbe).
        r.put("redis_mem_data_b_per_job", round((enqueued.dataMemory() - before.dataMemory()) / (double) n, 1));
        r.put("delayq_cpu_ms_per_1k", round((selfCpu - selfCpu0 + replicaCpu) * 1e6 / n, 1));
        r.put("delayq_dispatch_cpu_ms_per_1k", round((selfCpu - selfCpuAtT0 + replicaCpu) * 1e6 / n, 1));
        r.put("take_ms", takePercentiles(topic));
        emit(r);
    }

    /** Groups of the jobs {@link #enqueue} makes: job i in group "g" + (i mod groups); 0 = no group. */
    volatile int groups;

    /** Whether the jobs {@link #enqueue} makes have mixed priorities: job i priority 1 + (i mod 5); false = none given (3). */
    volatile boolean mixedPriorities;

    private void enqueue(String topic, int n, java.util.function.IntToLongFunction dueOf, boolean viaRest) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> sent = new ArrayList<>();
            for (int from = 0; from < n; from += 1000) {
                List<NewJob> chunk = new ArrayList<>(1000);
                for (int i = from; i < Math.min(n, from + 1000); i++) {
                    chunk.add(new NewJob(topic, Integer.toString(i), false, dueOf.applyAsLong(i), 0, PAYLOAD,
                            io.delayq.core.IfExists.KEEP, null, groups > 0 ? "g" + (i % groups) : null, null, null,
                            mixedPriorities ? 1 + i % 5 : null));
                }
                sent.add(pool.submit(() -> {
                    if (viaRest) {
                        postBatch(chunk, topic);
                    } else {
                        jobs.scheduleAll(chunk);
                    }
                    return null;
                }));
            }
            for (Future<?> f : sent) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
    }

    /** Posts one batch; returns the reply body. */
    String postBatch(List<NewJob> chunk, String topic) throws Exception {
        StringBuilder b = new StringBuilder(chunk.size() * 80).append('[');
        for (NewJob j : chunk) {
            b.append(b.length() > 1 ? "," : "").append("{\"topic\":\"").append(topic).append("\",\"id\":\"").append(j.id())
                    .append("\",\"runAt\":\"").append(Instant.ofEpochMilli(j.millis())).append("\",\"payload\":")
                    .append(j.payloadJson());
            if (j.group() != null) {
                b.append(",\"group\":\"").append(j.group()).append('"');
            }
            if (j.priority() != null) {
                b.append(",\"priority\":").append(j.priority());
            }
            b.append('}');
        }
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/jobs/batch"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(b.append(']').toString()))
                .build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("batch enqueue failed: " + r.statusCode() + " " + r.body());
        }
        return r.body();
    }

    /**
     * The dedup window (topic bench-dedup remembers succeeded ids for an hour): a burst of N jobs,
     * measured as usual, then the Redis memory its remembered ids hold (used_memory once every
     * job was acked, against before the burst), then the same N ids enqueued again over REST,
     * which must all answer succeeded and leave nothing scheduled.
     */
    private void dedup() throws Exception {
        flush();
        RedisInfo before = RedisInfo.read();
        int n = o.n();
        measure("dedup-burst", "bench-dedup", n, 0, o.start() * 1000L, true, true, 0);
        RedisInfo acked = RedisInfo.read();
        long start = System.currentTimeMillis();
        int succeeded = 0;
        for (int from = 0; from < n; from += 1000) {
            List<NewJob> chunk = new ArrayList<>(1000);
            for (int i = from; i < Math.min(n, from + 1000); i++) {
                chunk.add(new NewJob("bench-dedup", Integer.toString(i), false, start, 0, PAYLOAD));
            }
            String body = postBatch(chunk, "bench-dedup");
            for (int at = body.indexOf("\"succeeded\""); at >= 0; at = body.indexOf("\"succeeded\"", at + 1)) {
                succeeded++;
            }
        }
        long ms = Math.max(1, System.currentTimeMillis() - start);
        RedisInfo after = RedisInfo.read();
        long scheduled = jobsInRedis("bench-dedup");
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "dedup-reenqueue");
        r.put("params", Map.of("n", n, "dedup_window", "1h", "enqueue_via", "rest-batch-1000"));
        r.put("ok", succeeded == n && scheduled == 0 && recorder.duplicates() == 0);
        r.put("succeeded", succeeded);
        r.put("scheduled_after", scheduled);
        r.put("dup", recorder.duplicates());
        r.put("enqueue_jps", Math.round(n * 1000.0 / ms));
        r.put("redis_cmds_per_job", round(after.commandsSince(acked, 2) / (double) n, 2));
        r.put("redis_mem_b_per_job", round((acked.usedMemory() - before.usedMemory()) / (double) n, 1));
        emit(r);
    }

    /** all: every id seen (then 1 s for late duplicates); stall: nothing new for 10 s after the last due; deadline. */
    private String awaitDone(int n, long lastDue, List<Replica> replicas) throws InterruptedException {
        long deadline = lastDue + 120_000 + n;
        while (true) {
            replicas.forEach(rep -> rep.drainInto(recorder));
            long now = System.currentTimeMillis();
            if (recorder.distinct() >= n) {
                Thread.sleep(1000);
                replicas.forEach(rep -> rep.drainInto(recorder));
                return "all";
            }
            if (now > lastDue + 10_000 && now - recorder.lastProgressMs() > 10_000) {
                return "stall";
            }
            if (now > deadline) {
                return "deadline";
            }
            Thread.sleep(20);
        }
    }

    private Map<String, Object> takePercentiles(String topic) {
        Map<String, Object> t = new LinkedHashMap<>();
        for (ValueAtPercentile v : metrics.takeTimer(topic).takeSnapshot().percentileValues()) {
            t.put("p" + Math.round(v.percentile() * 100), round(v.value(java.util.concurrent.TimeUnit.MILLISECONDS), 3));
        }
        return t;
    }

    /**
     * Result retention's cost (issue 35): an N-job burst on a topic without it (bench), then on one
     * that keeps every succeeded job 10 min with a small result (bench-results, its observer sets
     * {"ok": true, "id": ...}), twice in turn (the first burst of a run pays for more JIT);
     * throughput ratio of the second pair (target >= 0.8) and the Redis memory each kept job holds
     * (used_memory once all were acked, against before the burst, over N: the ack moved every job
     * with its record and result to the results hash; delayq.results.max-jobs is set above N).
     */
    void results() throws Exception {
        long plainJps = 0, keptJps = 0;
        double perJob = 0;
        for (int round = 1; round <= 2; round++) {
            schedule("burst-results-off-" + round, "bench", o.n(), 0, o.start() * 1000L, true, true, 0);
            plainJps = ((Number) results.get(results.size() - 1).get("throughput_jps")).longValue();
            flush();
            RedisInfo before = RedisInfo.read();
            measure("burst-results-on-" + round, "bench-results", o.n(), 0, o.start() * 1000L, true, true, 0);
            keptJps = ((Number) results.get(results.size() - 1).get("throughput_jps")).longValue();
            perJob = (RedisInfo.read().usedMemory() - before.usedMemory()) / (double) o.n();
        }
        Map<String, Object> r = new LinkedHashMap<>();
        double ratio = keptJps / (double) Math.max(1, plainJps);
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "results-cost");
        r.put("params", Map.of("n", o.n(), "result_retention", "10m", "results_max_jobs", 1_000_000, "result_b", 30,
                "payload_b", PAYLOAD.length()));
        r.put("ok", ratio >= 0.8);
        r.put("throughput_ratio", round(ratio, 2));
        r.put("redis_mem_b_per_kept_job", round(perJob, 1));
        emit(r);
    }

    /**
     * The history's cost (issue 22): an N-job burst with the history off, then the same with it on
     * (this bench flushes it every second, ten times the default, so a burst of a few seconds pays
     * several flushes), throughput and Redis commands per job of each; then the idle commands/s
     * of this replica with the history on, and off (each over 30 s at least; the run fails above
     * {@link #IDLE_BOUND}).
     */
    void history() throws Exception {
        historyRecorder.flush();
        // off and on twice, in turn: the first burst of a run pays for more JIT than the next
        for (int round = 1; round <= 2; round++) {
            history.counts().disable();
            schedule("burst-history-off-" + round, "bench", o.n(), 0, o.start() * 1000L, true, true, 0);
            history.counts().enable(redisClock::redisNow);
            long calls0 = history.scriptCalls();
            schedule("burst-history-on-" + round, "bench", o.n(), 0, o.start() * 1000L, true, true, 0);
            historyRecorder.flush();
            System.err.printf("history: burst %d with history on: %d history script calls in all (its flushes)%n", round,
                    history.scriptCalls() - calls0);
        }
        for (boolean on : new boolean[] { true, false }) {
            if (on) {
                history.counts().enable(redisClock::redisNow);
            } else {
                history.counts().disable();
            }
            historyRecorder.flush();
            Thread.sleep(2000); // settle
            int idleS = Math.max(30, o.idleS()); // discrete commands: a short window rounds badly
            RedisInfo before = RedisInfo.read();
            Thread.sleep(idleS * 1000L);
            RedisInfo after = RedisInfo.read();
            double seconds = (after.atMs() - before.atMs()) / 1000.0;
            Map<String, Object> r = new LinkedHashMap<>();
            String name = on ? "idle-history-on" : "idle-history-off";
            double perS = after.commandsSince(before, 1) / seconds;
            r.put("schema", "delayq-bench/v1");
            r.put("scenario", name);
            r.put("params", Map.of("idle_s", idleS, "replicas", 1, "history_flush_s", 1));
            r.put("ok", idleWithinBound(name, perS));
            r.put("idle_cmds_per_s", round(perS, 2));
            emit(r);
        }
        history.counts().enable(redisClock::redisNow);
    }

    /**
     * Commands per second an idle replica costs Redis: empty, then with 10,000 jobs due in an hour.
     * Each fails the run above {@link #IDLE_BOUND} (the contract: about one command per second per
     * replica). The smoke run measures the empty case over {@value #SMOKE_IDLE_S} s, long enough
     * that the poll's jitter and the few commands of a minute cannot carry it over the bound, and
     * the other in 2 s, unchecked.
     */
    void idle() throws Exception {
        for (int future : new int[] { 0, 10_000 }) {
            flush();
            if (future > 0) {
                long at = System.currentTimeMillis() + 3_600_000;
                enqueue("bench", future, i -> at + i, false);
            }
            Thread.sleep(o.smoke() ? 1000 : 2000); // settle
            boolean checked = !o.smoke() || future == 0;
            int idleS = o.smoke() ? (checked ? SMOKE_IDLE_S : o.idleS()) : Math.max(30, o.idleS());
            RedisInfo before = RedisInfo.read();
            double cpu0 = Stats.selfCpuSeconds();
            Thread.sleep(idleS * 1000L);
            RedisInfo after = RedisInfo.read();
            double seconds = (after.atMs() - before.atMs()) / 1000.0;
            Map<String, Object> r = new LinkedHashMap<>();
            String name = future == 0 ? "idle-empty" : "idle-10k-future";
            r.put("schema", "delayq-bench/v1");
            r.put("scenario", name);
            r.put("params", Map.of("idle_s", idleS, "future_jobs", future, "replicas", 1));
            double perS = after.commandsSince(before, 1) / seconds;
            r.put("ok", !checked || idleWithinBound(name, perS));
            r.put("idle_cmds_per_s", round(perS, 2));
            r.put("idle_delayq_cpu_ms_per_s", round((Stats.selfCpuSeconds() - cpu0) * 1000 / seconds, 2));
            emit(r);
        }
    }

    /** The idle budget of one replica, in Redis commands per second (total_commands_processed). */
    static final double IDLE_BOUND = 1.0;
    /** The smoke run's idle window (s): CI checks the bound over it. */
    static final int SMOKE_IDLE_S = 30;

    /** Whether an idle figure is within {@link #IDLE_BOUND}; says so on stderr when it is not. */
    static boolean idleWithinBound(String scenario, double perS) {
        if (perS <= IDLE_BOUND) {
            return true;
        }
        System.err.printf("FAILED %s: an idle replica cost Redis %.2f commands/s, above the bound of %.1f per replica%n",
                scenario, perS, IDLE_BOUND);
        return false;
    }

    /** Take latency and lateness of a 5,000-job spread with K jobs already scheduled in the future. */
    void backlog(String name, String topic, int k) throws Exception {
        flush();
        long t = System.currentTimeMillis();
        long fill0 = System.nanoTime();
        // future jobs over the next 24 hours: today's and tomorrow's shards hold them
        for (int from = 0; from < k; from += 200_000) {
            int to = Math.min(k, from + 200_000);
            ExecutorService pool = Executors.newFixedThreadPool(3);
            List<Future<?>> f = new ArrayList<>();
            for (int c = from; c < to; c += 1000) {
                int lo = c, hi = Math.min(to, c + 1000);
                f.add(pool.submit(() -> {
                    List<NewJob> chunk = new ArrayList<>(hi - lo);
                    for (int i = lo; i < hi; i++) {
                        chunk.add(new NewJob(topic, "f" + i, false, t + 3_600_000 + (i * 86_400_000L) / k, 0, PAYLOAD));
                    }
                    jobs.scheduleAll(chunk);
                    return null;
                }));
            }
            for (Future<?> x : f) {
                x.get();
            }
            pool.shutdown();
            if (k >= 1_000_000) {
                System.err.printf("  %s: %d of %d future jobs scheduled (%d/s)%n", name, to, k,
                        Math.round(to / ((System.nanoTime() - fill0) / 1e9)));
            }
        }
        double fillS = (System.nanoTime() - fill0) / 1e9;
        int n = o.smoke() ? 200 : 5000;
        pendingFields.put("backlog_jobs", k);
        pendingFields.put("backlog_fill_jps", Math.round(k / fillS));
        measure(name, topic, n, o.smoke() ? 2000 : 5000, o.smoke() ? 2000 : 3000, false, false, 0);
    }

    void emit(Map<String, Object> r) {
        r.putAll(pendingFields);
        pendingFields.clear();
        results.add(r);
        System.out.println(Report.json(r));
        try {
            Path dir = Files.createDirectories(Path.of("bench", "results"));
            Files.writeString(dir.resolve("last-run.jsonl"), Report.json(r) + "\n",
                    results.size() == 1 && System.getenv("BENCH_APPEND") == null ? java.nio.file.StandardOpenOption.TRUNCATE_EXISTING : java.nio.file.StandardOpenOption.APPEND,
                    java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE);
        } catch (Exception e) {
            System.err.println("could not write bench/results: " + e);
        }
    }

    static double round(double v, int digits) {
        double f = Math.pow(10, digits);
        return Math.round(v * f) / f;
    }
}
