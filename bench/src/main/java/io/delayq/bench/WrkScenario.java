package io.delayq.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.delayq.core.NewJob;
import io.delayq.dev.Resp;
import io.delayq.store.Keys;
import io.delayq.store.Partition;
import io.quarkus.arc.Arc;

/**
 * Single-job {@code POST /jobs} under wrk against its floor (scenario {@code wrk}): the REST path
 * as a client with many connections sees it, beside a route that does the same store work and
 * nothing else. wrk (from PATH) posts one job per request, each with an id no other request uses
 * (run, wrk thread, counter) and a 16-byte payload, due in an hour so that no take runs while it
 * measures. In one run, with the same wrk settings each time:
 * <ol>
 * <li>the floor, {@link FloorRoute} ({@code POST /bench-floor}): a bare Vert.x route on the same
 * HTTP server that parses the same body and runs the store's enqueue (the same {@code enqueue1}
 * script through the same Redis client and connections), then answers 201 with a small JSON body;
 * <li>{@code POST /jobs}, at full speed: its rate against the floor's is the ratio (target
 * &ge; 0.7);
 * <li>{@code POST /jobs} at a fixed rate, 80 % of the floor's measured rate, and then the floor at
 * the same rate: the latency a client sees below saturation (target p99 &le; 20 ms). wrk2 is not
 * at hand, so wrk paces itself: the script's {@code delay()} gives each wrk thread a schedule of
 * send times (rate / threads per second, LuaJIT's ffi reading CLOCK_MONOTONIC) and holds each
 * request until its slot; a connection that comes free late sends at once and the request counts
 * as behind schedule ({@code behind}: its latency then hides the wait, as in any closed-loop
 * client, so the share behind says whether the figure is an open-loop one).
 * </ol>
 * The ratio of two rates of one run is what carries over to another machine (on 2 cores wrk takes
 * a share of the CPU). Afterwards every job of each phase must be in Redis exactly once, each phase
 * on its own topic: as many records as due entries, every id one wrk sent, and at least one record
 * per 2xx answer (a request wrk cut off at the end may have been written without being counted).
 * Redis scripts and commands per job of the floor and of {@code POST /jobs} show that both do the
 * same store work; delayq CPU per job shows what the REST layer adds. Then, for comparison, batch
 * enqueue over REST ({@code POST /jobs/batch}, 1000 jobs per request, 4 clients).
 * <p>
 * Settings from the environment: {@code BENCH_WRK_THREADS} (2), {@code BENCH_WRK_CONNECTIONS}
 * (64; smoke 16), {@code BENCH_WRK_SECONDS} (15; smoke 2), {@code BENCH_WRK_BATCH_JOBS} (50,000;
 * smoke 2,000), {@code BENCH_WRK_JFR} (a directory: JFR recordings of the server during the floor's
 * and {@code POST /jobs}' full-speed phases and {@code POST /jobs}' fixed-rate one, {@code floor.jfr},
 * {@code post.jfr} and {@code post-paced.jfr}, with the "profile" settings and execution sampled
 * every millisecond; their overhead is in that run's figures).
 */
final class WrkScenario {
    static final String TOPIC = "bench-wrk";
    static final String FLOOR_TOPIC = "bench-wrk-floor";
    static final String PACED_TOPIC = "bench-wrk-paced";
    static final String FLOOR_PACED_TOPIC = "bench-wrk-floor-paced";
    /** The wrk script: a POST of a new job per request, to /jobs ("post") or to the floor ("floor"). */
    static final String SCRIPT = """
            -- delayq bench (WrkScenario): one new job per request, ids unique per run, wrk thread and counter
            local threads, next_tid = {}, 1
            function setup(thread)
              thread:set("tid", next_tid)
              next_tid = next_tid + 1
              table.insert(threads, thread)
            end
            -- globals, so that done() can read them from each thread (thread:get)
            sent = 0
            behind = 0
            local mode, run, topic, rate = "post", "", "", 0
            local path = "/jobs"
            function init(args)
              mode, run, topic, rate = args[1], args[2], args[3], tonumber(args[4] or "0")
              if mode == "floor" then path = "%FLOOR%" end
            end
            local headers = { ["Content-Type"] = "application/json" }
            function request()
              sent = sent + 1
              return wrk.format("POST", path, headers, '{"topic":"' .. topic .. '","id":"' .. run .. '-' .. tid
                .. '-' .. sent .. '","delayMs":3600000,"payload":%PAYLOAD%}')
            end
            function done(summary, latency, requests)
              local counts, late = "", 0
              for _, t in ipairs(threads) do
                counts = counts .. t:get("tid") .. ":" .. (t:get("sent") or 0) .. ","
                late = late + (t:get("behind") or 0)
              end
              local e = summary.errors
              io.write(string.format("WRK requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d non2xx=%d"
                .. " socket_errors=%d behind=%d sent=%s\\n", summary.requests, summary.duration, latency:percentile(50),
                latency:percentile(99), latency.max, e.status, e.connect + e.read + e.write + e.timeout, late, counts))
            end
            """.replace("%PAYLOAD%", BenchApp.PAYLOAD).replace("%FLOOR%", FloorRoute.PATH);
    /**
     * Added for a fixed rate: each wrk thread sends at {@code rate} requests/s (its 4th argument),
     * each request held until its slot on the thread's schedule; one sent more than 1 ms after its
     * slot (no connection was free) counts as behind.
     */
    private static final String PACED = """
            local ffi = require("ffi")
            ffi.cdef[[
            typedef struct { long tv_sec; long tv_nsec; } dq_timespec;
            int clock_gettime(int clk, dq_timespec *tp);
            ]]
            local ts = ffi.new("dq_timespec")
            local function now_ms()
              ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
              return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
            end
            local slot = nil
            function delay()
              local now = now_ms()
              slot = (slot or now) + 1000 / rate
              local wait = slot - now
              if wait < -1 then behind = behind + 1 end
              if wait <= 0 then return 0 end
              return math.floor(wait + 0.5)
            end
            """;
    private static final Pattern RESULT = Pattern.compile("WRK requests=(\\d+) duration_us=(\\d+) p50_us=(\\d+) "
            + "p99_us=(\\d+) max_us=(\\d+) non2xx=(\\d+) socket_errors=(\\d+) behind=(\\d+) sent=(\\S*)");
    /** The targets of issue 24: POST /jobs at least 0.7 of the floor's rate, p99 at most 20 ms at 80 % of it. */
    static final double TARGET_RATIO = 0.7, PACED_SHARE = 0.8, TARGET_P99_MS = 20;

    private final BenchApp app;
    private final Keys keys;

    WrkScenario(BenchApp app) {
        this.app = app;
        this.keys = Arc.container().instance(Keys.class).get();
    }

    /** One wrk run's figures. */
    record WrkRun(long requests, double seconds, long p50Us, long p99Us, long maxUs, long non2xx, long socketErrors,
            long behind, Map<Integer, Long> sentByThread) {
        double perSecond() {
            return requests / seconds;
        }

        boolean clean() {
            return non2xx == 0 && socketErrors == 0 && requests > 0;
        }

        Map<String, Object> json() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("rps", Math.round(perSecond()));
            m.put("requests", requests);
            m.put("p50_ms", BenchApp.round(p50Us / 1000.0, 2));
            m.put("p99_ms", BenchApp.round(p99Us / 1000.0, 2));
            m.put("max_ms", BenchApp.round(maxUs / 1000.0, 2));
            m.put("non2xx", non2xx);
            m.put("socket_errors", socketErrors);
            return m;
        }

        Map<String, Object> pacedJson() {
            Map<String, Object> m = json();
            m.put("behind_schedule", BenchApp.round(behind / (double) Math.max(1, requests), 4));
            return m;
        }
    }

    /** A full-speed phase with what it cost: Redis scripts and commands, this process' CPU. */
    private record Measured(WrkRun run, Map<String, Object> costs) {
    }

    void run() throws Exception {
        String wrk = findWrk();
        boolean smoke = app.o.smoke();
        int threads = env("BENCH_WRK_THREADS", 2);
        int connections = env("BENCH_WRK_CONNECTIONS", smoke ? 16 : 64);
        int seconds = env("BENCH_WRK_SECONDS", smoke ? 2 : 15);
        String jfr = System.getenv("BENCH_WRK_JFR");
        String runId = "r" + Long.toString(System.currentTimeMillis(), 36);
        Path script = Files.createTempFile("delayq-wrk", ".lua");
        Path paced = Files.createTempFile("delayq-wrk-paced", ".lua");
        try {
            Files.writeString(script, SCRIPT);
            Files.writeString(paced, SCRIPT + PACED);
            // Warm-up first, on other topics (their last requests may still be landing when the
            // measured run starts): the JIT compiles both paths and wrk's script. Both paths in
            // turn, twice, 5 s each: with 3 s each once, the floor (measured first) cost as many
            // JFR samples per job as POST /jobs and two runs of four measured POST /jobs faster
            // than its floor, on a busy machine: the floor still warming, POST /jobs gaining from it.
            flush();
            for (int round = 0; round < (smoke ? 1 : 2); round++) {
                wrk(wrk, script, threads, connections, smoke ? 1 : 5, "floor", runId, FLOOR_TOPIC + "-warm", 0);
                wrk(wrk, script, threads, connections, smoke ? 1 : 5, "post", runId, TOPIC + "-warm", 0);
            }

            Measured floor = measured(wrk, script, threads, connections, seconds, "floor", runId, FLOOR_TOPIC,
                    jfr == null ? null : Path.of(jfr, "floor.jfr"));
            Measured post = measured(wrk, script, threads, connections, seconds, "post", runId, TOPIC,
                    jfr == null ? null : Path.of(jfr, "post.jfr"));
            double rate = Math.max(1, PACED_SHARE * floor.run().perSecond());
            jdk.jfr.Recording pacedJfr = startJfr(jfr == null ? null : Path.of(jfr, "post-paced.jfr"), "post-paced");
            WrkRun postPaced = wrk(wrk, paced, threads, connections, seconds, "post", runId, PACED_TOPIC, rate / threads);
            stopJfr(pacedJfr, jfr == null ? null : Path.of(jfr, "post-paced.jfr"));
            WrkRun floorPaced = wrk(wrk, paced, threads, connections, seconds, "floor", runId, FLOOR_PACED_TOPIC,
                    rate / threads);

            List<String> problems = new ArrayList<>();
            for (Map.Entry<String, WrkRun> phase : Map.of(FLOOR_TOPIC, floor.run(), TOPIC, post.run(), PACED_TOPIC,
                    postPaced, FLOOR_PACED_TOPIC, floorPaced).entrySet()) {
                String problem = checkStored(phase.getValue(), runId, phase.getKey());
                if (problem != null) {
                    problems.add(phase.getKey() + ": " + problem);
                }
            }
            double ratio = post.run().perSecond() / floor.run().perSecond();

            Map<String, Object> r = new LinkedHashMap<>();
            r.put("schema", "delayq-bench/v1");
            r.put("scenario", "wrk-post-jobs");
            r.put("params", Map.of("wrk", "-t" + threads + " -c" + connections + " -d" + seconds + "s --latency",
                    "payload_b", BenchApp.PAYLOAD.length(), "due_in_s", 3600, "floor", "POST " + FloorRoute.PATH,
                    "paced", "wrk delay(): per-thread schedule at " + Math.round(PACED_SHARE * 100) + " % of the floor's rate",
                    "jfr", jfr == null ? "off" : jfr));
            r.put("ok", problems.isEmpty() && floor.run().clean() && post.run().clean() && postPaced.clean()
                    && floorPaced.clean());
            if (!problems.isEmpty()) {
                r.put("problem", String.join("; ", problems));
            }
            Map<String, Object> floorJson = floor.run().json();
            floorJson.putAll(floor.costs());
            Map<String, Object> postJson = post.run().json();
            postJson.putAll(post.costs());
            r.put("floor", floorJson);
            r.put("post", postJson);
            r.put("ratio_to_floor", BenchApp.round(ratio, 3));
            Map<String, Object> fixed = new LinkedHashMap<>();
            fixed.put("target_rps", Math.round(rate));
            fixed.put("post", postPaced.pacedJson());
            fixed.put("floor", floorPaced.pacedJson());
            r.put("fixed_rate", fixed);
            r.put("targets", Map.of("ratio_min", TARGET_RATIO, "ratio_met", ratio >= TARGET_RATIO, "p99_ms_max",
                    TARGET_P99_MS, "p99_met", postPaced.p99Us() / 1000.0 <= TARGET_P99_MS));
            r.put("enqueue_jps", Math.round(post.run().perSecond()));
            batch(r, smoke);
            app.emit(r);
            System.err.printf("  wrk: floor %,.0f/s (p99 %.1f ms), POST /jobs %,.0f/s (p50 %.1f ms, p99 %.1f ms): ratio %.2f"
                    + " (target >= %.1f); at %,.0f/s (%.0f %% of the floor): POST /jobs %,.0f/s p50 %.2f ms p99 %.2f ms"
                    + " max %.1f ms (%.1f %% behind schedule; target p99 <= %.0f ms), floor p99 %.2f ms;"
                    + " delayq CPU µs per job: floor %s, POST /jobs %s; batch %s jobs/s%n",
                    floor.run().perSecond(), floor.run().p99Us() / 1000.0, post.run().perSecond(),
                    post.run().p50Us() / 1000.0, post.run().p99Us() / 1000.0, ratio, TARGET_RATIO, rate,
                    PACED_SHARE * 100, postPaced.perSecond(), postPaced.p50Us() / 1000.0, postPaced.p99Us() / 1000.0,
                    postPaced.maxUs() / 1000.0, 100.0 * postPaced.behind() / Math.max(1, postPaced.requests()),
                    TARGET_P99_MS, floorPaced.p99Us() / 1000.0, floor.costs().get("delayq_cpu_us_per_job"),
                    post.costs().get("delayq_cpu_us_per_job"), r.get("batch_jps"));
        } finally {
            Files.deleteIfExists(script);
            Files.deleteIfExists(paced);
        }
    }

    /**
     * A JFR recording of this process when {@code jfr} is not null: the "profile" settings, Java
     * execution sampled every millisecond (the default 10–20 ms leaves too few samples of two event loops).
     */
    private static jdk.jfr.Recording startJfr(Path jfr, String name) throws Exception {
        if (jfr == null) {
            return null;
        }
        Files.createDirectories(jfr.getParent());
        jdk.jfr.Recording recording = new jdk.jfr.Recording(jdk.jfr.Configuration.getConfiguration("profile"));
        recording.enable("jdk.ExecutionSample").withPeriod(java.time.Duration.ofMillis(1));
        recording.setName("delayq-wrk-" + name);
        recording.start();
        return recording;
    }

    private static void stopJfr(jdk.jfr.Recording recording, Path jfr) throws IOException {
        if (recording != null) {
            recording.stop();
            recording.dump(jfr);
            recording.close();
        }
    }

    /** A full-speed wrk phase with its Redis and CPU costs per job created; a JFR recording of it when asked. */
    private Measured measured(String wrk, Path script, int threads, int connections, int seconds, String mode,
            String runId, String topic, Path jfr) throws Exception {
        jdk.jfr.Recording recording = startJfr(jfr, mode);
        RedisInfo before = RedisInfo.read();
        double cpu0 = Stats.selfCpuSeconds();
        WrkRun run = wrk(wrk, script, threads, connections, seconds, mode, runId, topic, 0);
        double cpu = Stats.selfCpuSeconds() - cpu0;
        RedisInfo after = RedisInfo.read();
        stopJfr(recording, jfr);
        long created = run.requests() - run.non2xx();
        long scripts = after.evalCalls() - before.evalCalls();
        Map<String, Object> costs = new LinkedHashMap<>();
        costs.put("redis_scripts_per_job", BenchApp.round(scripts / (double) Math.max(1, created), 3));
        costs.put("redis_usec_per_script", BenchApp.round((after.evalUsec() - before.evalUsec()) / (double) Math.max(1, scripts), 1));
        costs.put("redis_cmds_per_job", BenchApp.round(after.commandsSince(before, 1) / (double) Math.max(1, created), 2));
        costs.put("delayq_cpu_us_per_job", BenchApp.round(cpu * 1e6 / Math.max(1, created), 1));
        return new Measured(run, costs);
    }

    /** Batch enqueue over REST for comparison: 1000 jobs per request, 4 clients. */
    private void batch(Map<String, Object> r, boolean smoke) throws Exception {
        int n = env("BENCH_WRK_BATCH_JOBS", smoke ? 2000 : 50_000);
        long due = System.currentTimeMillis() + 3_600_000;
        ExecutorService pool = Executors.newFixedThreadPool(4);
        long start = System.nanoTime();
        try {
            List<Future<?>> sent = new ArrayList<>();
            for (int from = 0; from < n; from += 1000) {
                List<NewJob> chunk = new ArrayList<>(1000);
                for (int i = from; i < Math.min(n, from + 1000); i++) {
                    chunk.add(new NewJob(TOPIC + "-batch", "b" + i, false, due, 0, BenchApp.PAYLOAD));
                }
                sent.add(pool.submit(() -> app.postBatch(chunk, TOPIC + "-batch")));
            }
            for (Future<?> f : sent) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        r.put("batch_jps", Math.round(n / ((System.nanoTime() - start) / 1e9)));
    }

    /**
     * Null when every job of the run is in Redis exactly once (a record and one due entry each, ids
     * only of those wrk sent, at least one per 2xx answer), else what is wrong.
     */
    private String checkStored(WrkRun post, String runId, String topic) throws InterruptedException {
        // A request still in flight when wrk exited may be stored between the reads below (its one
        // script writes record and due entry together): wait until the topic's record count holds.
        long last = -1;
        for (int i = 0; i < 50; i++) {
            long now = recordCount(topic);
            if (now == last) {
                break;
            }
            last = now;
            Thread.sleep(100);
        }
        long[] counts = new long[3]; // records, due entries, ids wrk did not send
        Pattern id = Pattern.compile(Pattern.quote(runId) + "-(\\d+)-(\\d+)");
        for (Partition p : app.store.partitionsOf(topic)) {
            String jobsKey = keys.jobs(p);
            Boolean read = onOwner(redis -> {
                counts[0] += redis.num("HLEN", jobsKey);
                String cursor = "0";
                do {
                    List<Object> page = redis.list("HSCAN", jobsKey, cursor, "COUNT", 1000);
                    cursor = page.get(0).toString();
                    List<?> kv = (List<?>) page.get(1);
                    for (int i = 0; i < kv.size(); i += 2) {
                        Matcher m = id.matcher(kv.get(i).toString());
                        Long sent = m.matches() ? post.sentByThread().get(Integer.parseInt(m.group(1))) : null;
                        if (sent == null || Long.parseLong(m.group(2)) > sent) {
                            counts[2]++;
                        }
                    }
                } while (!"0".equals(cursor));
                for (Object day : redis.list("ZRANGE", keys.days(p), 0, -1)) {
                    counts[1] += redis.num("ZCARD", keys.due(p, Integer.parseInt(day.toString())));
                }
                return true;
            });
            if (read == null) {
                return "cannot read partition " + p.index() + " of " + topic;
            }
        }
        long records = counts[0], dueEntries = counts[1], foreign = counts[2];
        long answered = post.requests() - post.non2xx();
        long sent = post.sentByThread().values().stream().mapToLong(Long::longValue).sum();
        if (records != dueEntries) {
            return records + " job records but " + dueEntries + " due entries";
        }
        if (foreign > 0) {
            return foreign + " job ids wrk did not send";
        }
        if (records < answered || records > sent) {
            return records + " jobs in Redis for " + answered + " 2xx answers and " + sent + " requests sent";
        }
        return null;
    }

    /** The records of a topic's partitions, over every node. */
    private long recordCount(String topic) {
        long n = 0;
        for (Partition p : app.store.partitionsOf(topic)) {
            Long hlen = onOwner(redis -> redis.num("HLEN", keys.jobs(p)));
            n += hlen == null ? 0 : hlen;
        }
        return n;
    }

    /**
     * {@code read} on the first Redis node that answers it: a Redis Cluster's nodes that do not hold
     * the slot of the keys it reads answer MOVED, and the next one is tried; null when none does.
     */
    private static <T> T onOwner(java.util.function.Function<Resp, T> read) {
        for (int port : RedisInfo.ports()) {
            try (Resp redis = new Resp(port)) {
                return read.apply(redis);
            } catch (IllegalStateException moved) {
                // not this node's slot
            }
        }
        return null;
    }

    /** One wrk run; {@code ratePerThread} &gt; 0 with the paced script: each wrk thread's requests/s. */
    private WrkRun wrk(String wrk, Path script, int threads, int connections, int seconds, String mode, String runId,
            String topic, double ratePerThread)
            throws IOException, InterruptedException {
        return runWrk(wrk, script, threads, connections, seconds, mode, runId, topic, app.base, ratePerThread);
    }

    /** One wrk run of {@link #SCRIPT} against {@code base} (also {@link ServerColdScenario}'s load). */
    static WrkRun runWrk(String wrk, Path script, int threads, int connections, int seconds, String mode, String runId,
            String topic, String base, double ratePerThread)
            throws IOException, InterruptedException {
        List<String> cmd = List.of(wrk, "-t" + threads, "-c" + connections, "-d" + seconds + "s", "--latency", "-s",
                script.toString(), base, "--", mode, runId, topic, Double.toString(ratePerThread));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int exit = p.waitFor();
        Matcher m = RESULT.matcher(out);
        if (exit != 0 || !m.find()) {
            throw new IllegalStateException("wrk failed (exit " + exit + "): " + String.join(" ", cmd) + "\n" + out);
        }
        Map<Integer, Long> sent = new HashMap<>();
        for (String kv : m.group(9).split(",")) {
            if (!kv.isEmpty()) {
                String[] s = kv.split(":");
                sent.put(Integer.parseInt(s[0]), Long.parseLong(s[1]));
            }
        }
        return new WrkRun(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)) / 1e6, Long.parseLong(m.group(3)),
                Long.parseLong(m.group(4)), Long.parseLong(m.group(5)), Long.parseLong(m.group(6)),
                Long.parseLong(m.group(7)), Long.parseLong(m.group(8)), sent);
    }

    /** Empties Redis between the runs: the checks count this run's jobs only. */
    private static void flush() {
        for (int port : RedisInfo.ports()) {
            try (Resp redis = new Resp(port)) {
                redis.call("FLUSHALL");
            }
        }
    }

    static String findWrk() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, "wrk");
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        throw new IllegalStateException("the wrk scenario needs wrk on PATH (Debian: apt-get install -y wrk)");
    }

    private static int env(String name, int dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : Integer.parseInt(v.trim());
    }
}
