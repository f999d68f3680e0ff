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
 * Single-job {@code POST /jobs} under wrk (scenario {@code wrk}): the REST path as a client with
 * many connections sees it. wrk (from PATH) posts one job per request, each with an id no other
 * request uses (run, wrk thread, counter) and a 16-byte payload, due in an hour so that no take
 * runs while it measures; then the same wrk settings against a path that answers 404, in the same
 * run, because on 2 cores wrk takes a share of the CPU and the ratio is what carries over to
 * another machine. Afterwards every job must be in Redis exactly once: as many records as due
 * entries, every id one wrk sent, and at least one record per 2xx answer (a request wrk cut off
 * at the end may have been written without being counted). Then, for comparison, batch enqueue
 * over REST ({@code POST /jobs/batch}, 1000 jobs per request, 4 clients).
 * <p>
 * Settings from the environment: {@code BENCH_WRK_THREADS} (2), {@code BENCH_WRK_CONNECTIONS}
 * (64), {@code BENCH_WRK_SECONDS} (15; smoke 3), {@code BENCH_WRK_BATCH_JOBS} (50,000; smoke
 * 2,000).
 */
final class WrkScenario {
    static final String TOPIC = "bench-wrk";
    /** The wrk script: a POST of a new job per request; "404" as its argument, a GET of a missing path. */
    private static final String SCRIPT = """
            -- delayq bench (WrkScenario): one new job per request, ids unique per run, wrk thread and counter
            local threads, next_tid = {}, 1
            function setup(thread)
              thread:set("tid", next_tid)
              next_tid = next_tid + 1
              table.insert(threads, thread)
            end
            -- globals, so that done() can read them from each thread (thread:get)
            sent = 0
            local mode, run, topic = "post", "", ""
            function init(args)
              mode, run, topic = args[1], args[2], args[3]
            end
            local headers = { ["Content-Type"] = "application/json" }
            function request()
              sent = sent + 1
              if mode == "404" then
                return wrk.format("GET", "/bench-wrk-404")
              end
              return wrk.format("POST", "/jobs", headers, '{"topic":"' .. topic .. '","id":"' .. run .. '-' .. tid
                .. '-' .. sent .. '","delayMs":3600000,"payload":%PAYLOAD%}')
            end
            function done(summary, latency, requests)
              local counts = ""
              for _, t in ipairs(threads) do counts = counts .. t:get("tid") .. ":" .. (t:get("sent") or 0) .. "," end
              local e = summary.errors
              io.write(string.format("WRK requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d non2xx=%d"
                .. " socket_errors=%d sent=%s\\n", summary.requests, summary.duration, latency:percentile(50),
                latency:percentile(99), latency.max, e.status, e.connect + e.read + e.write + e.timeout, counts))
            end
            """.replace("%PAYLOAD%", BenchApp.PAYLOAD);
    private static final Pattern RESULT = Pattern.compile("WRK requests=(\\d+) duration_us=(\\d+) p50_us=(\\d+) "
            + "p99_us=(\\d+) max_us=(\\d+) non2xx=(\\d+) socket_errors=(\\d+) sent=(\\S*)");

    private final BenchApp app;
    private final Keys keys;

    WrkScenario(BenchApp app) {
        this.app = app;
        this.keys = Arc.container().instance(Keys.class).get();
    }

    /** One wrk run's figures. */
    record WrkRun(long requests, double seconds, long p50Us, long p99Us, long maxUs, long non2xx, long socketErrors,
            Map<Integer, Long> sentByThread) {
        double perSecond() {
            return requests / seconds;
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
    }

    void run() throws Exception {
        String wrk = findWrk();
        boolean smoke = app.o.smoke();
        int threads = env("BENCH_WRK_THREADS", 2);
        int connections = env("BENCH_WRK_CONNECTIONS", smoke ? 16 : 64);
        int seconds = env("BENCH_WRK_SECONDS", smoke ? 3 : 15);
        String runId = "r" + Long.toString(System.currentTimeMillis(), 36);
        Path script = Files.createTempFile("delayq-wrk", ".lua");
        try {
            Files.writeString(script, SCRIPT);
            // a short run first, on another topic (its last requests may still be landing when the
            // measured run starts): the JIT compiles the enqueue path, the 404 path and wrk's script
            flush();
            wrk(wrk, script, threads, connections, smoke ? 1 : 3, "404", runId, TOPIC + "-warm");
            wrk(wrk, script, threads, connections, smoke ? 1 : 3, "post", runId, TOPIC + "-warm");

            RedisInfo before = RedisInfo.read();
            double cpu0 = Stats.selfCpuSeconds();
            WrkRun post = wrk(wrk, script, threads, connections, seconds, "post", runId, TOPIC);
            double cpu = Stats.selfCpuSeconds() - cpu0;
            RedisInfo after = RedisInfo.read();
            WrkRun notFound = wrk(wrk, script, threads, connections, seconds, "404", runId, TOPIC);
            String problem = checkStored(post, runId);
            long created = post.requests() - post.non2xx();

            Map<String, Object> r = new LinkedHashMap<>();
            r.put("schema", "delayq-bench/v1");
            r.put("scenario", "wrk-post-jobs");
            r.put("params", Map.of("wrk", "-t" + threads + " -c" + connections + " -d" + seconds + "s --latency",
                    "payload_b", BenchApp.PAYLOAD.length(), "due_in_s", 3600));
            r.put("ok", problem == null && post.non2xx() == 0 && post.socketErrors() == 0 && created > 0);
            if (problem != null) {
                r.put("problem", problem);
            }
            r.put("post", post.json());
            r.put("not_found", notFound.json());
            r.put("ratio_to_404", BenchApp.round(post.perSecond() / notFound.perSecond(), 3));
            long scripts = after.evalCalls() - before.evalCalls();
            r.put("redis_scripts_per_job", BenchApp.round(scripts / (double) Math.max(1, created), 3));
            r.put("redis_usec_per_script", BenchApp.round((after.evalUsec() - before.evalUsec()) / (double) Math.max(1, scripts), 1));
            r.put("redis_cmds_per_job", BenchApp.round(after.commandsSince(before, 1) / (double) Math.max(1, created), 2));
            r.put("delayq_cpu_us_per_job", BenchApp.round(cpu * 1e6 / Math.max(1, created), 1));
            r.put("enqueue_jps", Math.round(post.perSecond()));
            batch(r, smoke);
            app.emit(r);
            System.err.printf("  wrk: POST /jobs %,.0f/s (p50 %.1f ms, p99 %.1f ms), 404 %,.0f/s (p99 %.1f ms): ratio %.2f;"
                    + " Redis %s µs per enqueue script; batch %s jobs/s%n", post.perSecond(), post.p50Us() / 1000.0,
                    post.p99Us() / 1000.0, notFound.perSecond(), notFound.p99Us() / 1000.0,
                    post.perSecond() / notFound.perSecond(), r.get("redis_usec_per_script"), r.get("batch_jps"));
        } finally {
            Files.deleteIfExists(script);
        }
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
    private String checkStored(WrkRun post, String runId) {
        long records = 0, dueEntries = 0, foreign = 0;
        Pattern id = Pattern.compile(Pattern.quote(runId) + "-(\\d+)-(\\d+)");
        List<Integer> ports = RedisInfo.ports();
        for (Partition p : app.store.partitionsOf(TOPIC)) {
            String jobsKey = keys.jobs(p);
            Long hlen = null;
            for (int port : ports) {
                try (Resp redis = new Resp(port)) {
                    hlen = redis.num("HLEN", jobsKey);
                    records += hlen;
                    String cursor = "0";
                    do {
                        List<Object> page = redis.list("HSCAN", jobsKey, cursor, "COUNT", 1000);
                        cursor = page.get(0).toString();
                        List<?> kv = (List<?>) page.get(1);
                        for (int i = 0; i < kv.size(); i += 2) {
                            Matcher m = id.matcher(kv.get(i).toString());
                            Long sent = m.matches() ? post.sentByThread().get(Integer.parseInt(m.group(1))) : null;
                            if (sent == null || Long.parseLong(m.group(2)) > sent) {
                                foreign++;
                            }
                        }
                    } while (!"0".equals(cursor));
                    for (Object day : redis.list("ZRANGE", keys.days(p), 0, -1)) {
                        dueEntries += redis.num("ZCARD", keys.due(p, Integer.parseInt(day.toString())));
                    }
                    break;
                } catch (IllegalStateException moved) {
                    // a Redis Cluster node that does not hold this slot (MOVED): the next one does
                }
            }
            if (hlen == null) {
                return "cannot read partition " + p.index() + " of " + TOPIC;
            }
        }
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

    private WrkRun wrk(String wrk, Path script, int threads, int connections, int seconds, String mode, String runId,
            String topic)
            throws IOException, InterruptedException {
        List<String> cmd = List.of(wrk, "-t" + threads, "-c" + connections, "-d" + seconds + "s", "--latency", "-s",
                script.toString(), app.base, "--", mode, runId, topic);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int exit = p.waitFor();
        Matcher m = RESULT.matcher(out);
        if (exit != 0 || !m.find()) {
            throw new IllegalStateException("wrk failed (exit " + exit + "): " + String.join(" ", cmd) + "\n" + out);
        }
        Map<Integer, Long> sent = new HashMap<>();
        for (String kv : m.group(8).split(",")) {
            if (!kv.isEmpty()) {
                String[] s = kv.split(":");
                sent.put(Integer.parseInt(s[0]), Long.parseLong(s[1]));
            }
        }
        return new WrkRun(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)) / 1e6, Long.parseLong(m.group(3)),
                Long.parseLong(m.group(4)), Long.parseLong(m.group(5)), Long.parseLong(m.group(6)),
                Long.parseLong(m.group(7)), sent);
    }

    /** Empties Redis between the runs: the checks count this run's jobs only. */
    private static void flush() {
        for (int port : RedisInfo.ports()) {
            try (Resp redis = new Resp(port)) {
                redis.call("FLUSHALL");
            }
        }
    }

    private static String findWrk() {
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
