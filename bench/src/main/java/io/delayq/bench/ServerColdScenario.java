package io.delayq.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.eclipse.microprofile.config.ConfigProvider;

import io.delayq.core.NewJob;
import io.delayq.dev.RedisProcess;

/**
 * A fresh replica of the packaged server (scenario {@code server-cold}, the third part of
 * {@code bench/run.sh coldwarm}): {@code server/target/quarkus-app/quarkus-run.jar} started as a
 * process of its own on this benchmark's Redis, each figure in a fresh process, for two
 * variants, the plain JVM and the AOT cache (when the server was packaged with {@code -Paot}:
 * the JVM options of the image's command line, {@code -XX:AOTCache=app.aot} and whatever else it
 * sets, see {@link #imageFlags}), and "warm": the plain process again after a warm-up ("warm-aot":
 * each aot burst process after the same warm-up, the image's flags warm, median over the reps). Every variant runs with
 * {@link #CONTAINER_FLAGS} unless {@code BENCH_COLD_FLAGS} says otherwise: the collector and heap
 * a replica of {@code k8s/deployment.yaml} gets.
 * <ul>
 * <li>ready: from exec to the first 200 of {@code /q/health/ready} (polled every 10 ms);</li>
 * <li>enqueue: single-job {@code POST /jobs} under wrk -t2 -c64 (the {@code wrk} scenario's
 * script, jobs due in an hour on a topic no one serves) for the first 15 s of load, from the
 * moment of ready, in three consecutive 5 s runs; with the server's JIT time and classes loaded
 * ({@code jstat}) and its CPU per window;</li>
 * <li>burst: 20,000 HTTP-target jobs already due when the replica starts (enqueued before, on a
 * topic only the replica serves) to the benchmark's receiver: jobs/s from the first delivery to
 * the last, and from exec.</li>
 * </ul>
 * Warm: the plain burst process, after 30 s of wrk load and a burst of 20,000, then a burst again
 * (the topic paused while its 20,000 jobs are enqueued, then resumed) and 15 s of wrk.
 * {@code BENCH_SERVER_APP} names another quarkus-app directory.
 */
final class ServerColdScenario {
    static final String TOPIC = "cold-http";
    static final String WRK_TOPIC = "cold-wrk";
    /** What the JVM's ergonomics give in k8s/deployment.yaml's container (2 CPUs, 512 MiB). */
    static final String CONTAINER_FLAGS = "-XX:+UseSerialGC -Xmx128m";
    static final int BURST = 20_000;

    private final BenchApp app;
    private final Path dir;
    private final String receiverUrl;

    ServerColdScenario(BenchApp app) {
        this.app = app;
        this.dir = Path.of(System.getenv().getOrDefault("BENCH_SERVER_APP", "server/target/quarkus-app")).toAbsolutePath();
        this.receiverUrl = HttpScenario.receiver.url();
    }

    /** One server process. */
    private final class Server {
        final Process process;
        final String base;
        final long startNanos;
        double readyMs;

        Server(List<String> jvmFlags, Path dir) throws IOException {
            int port = RedisProcess.freePort();
            List<String> cmd = new ArrayList<>();
            cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            cmd.addAll(jvmFlags);
            cmd.addAll(List.of("-Dquarkus.http.port=" + port,
                    "-Dquarkus.redis.hosts=" + ConfigProvider.getConfig().getValue("quarkus.redis.hosts", String.class),
                    "-Dquarkus.shutdown.delay-enabled=false", "-Ddelayq.topics." + TOPIC + ".http.url=" + receiverUrl,
                    "-jar", dir.resolve("quarkus-run.jar").toString()));
            base = "http://127.0.0.1:" + port;
            startNanos = System.nanoTime();
            process = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        }

        void awaitReady() throws Exception {
            HttpRequest probe = HttpRequest.newBuilder(URI.create(base + "/q/health/ready")).timeout(Duration.ofSeconds(2)).build();
            while (true) {
                try {
                    if (app.http.send(probe, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                        readyMs = (System.nanoTime() - startNanos) / 1e6;
                        return;
                    }
                } catch (IOException notYet) {
                    // not listening yet
                }
                if (!process.isAlive()) {
                    throw new IllegalStateException("the server exited with " + process.exitValue());
                }
                if (System.nanoTime() - startNanos > 120e9) {
                    throw new IllegalStateException("the server was not ready within 120 s");
                }
                Thread.sleep(10);
            }
        }

        void post(String path) throws Exception {
            HttpResponse<String> r = app.http.send(HttpRequest.newBuilder(URI.create(base + path))
                    .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("POST " + path + ": " + r.statusCode() + " " + r.body());
            }
        }

        void stop() throws InterruptedException {
            process.destroy();
            if (!process.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
        }
    }

    void run() throws Exception {
        if (!Files.exists(dir.resolve("quarkus-run.jar"))) {
            throw new IllegalStateException("no " + dir.resolve("quarkus-run.jar") + ": ./mvnw -B package -pl server -am -Paot");
        }
        boolean aot = Files.exists(dir.resolve("app.aot"));
        String wrk = WrkScenario.findWrk();
        Path script = Files.createTempFile("delayq-wrk", ".lua");
        Files.writeString(script, WrkScenario.SCRIPT);
        Map<String, Map<String, Object>> rows = new LinkedHashMap<>();
        int reps = Integer.parseInt(System.getenv().getOrDefault("BENCH_COLD_REPS", "3"));
        // BENCH_COLD_FLAGS: JVM flags added to every variant, warm included (a flag tried before it
        // is shipped); BENCH_COLD_VARIANTS: more AOT-cache variants, "name=flags;name=flags", each
        // alternating with the others (its ratio is to the plain variant's warm rate); a variant's
        // "--app=DIR" runs another quarkus-app directory's jar with its own cache (another build, such
        // as the commit before a change, measured in the same run).
        Map<String, Path> dirs = new LinkedHashMap<>();
        // The default: the collector and heap the JVM's ergonomics choose in k8s/deployment.yaml's
        // container (limits 2 CPUs, 512 MiB: below 1,792 MB the JVM is not "server class", so the serial
        // collector and a quarter of the memory as heap), which this machine's 24 GB would not give
        // (G1, 6 GB); BENCH_COLD_FLAGS=" " for this machine's own ergonomics.
        List<String> common = words(System.getenv().getOrDefault("BENCH_COLD_FLAGS", CONTAINER_FLAGS));
        Map<String, List<String>> variants = new LinkedHashMap<>();
        variants.put("plain", common);
        if (aot) {
            List<String> cached = new ArrayList<>(common);
            cached.addAll(imageFlags(dir.resolve("app.aot")));
            variants.put("aot", cached);
            for (String v : System.getenv().getOrDefault("BENCH_COLD_VARIANTS", "").split(";")) {
                if (!v.isBlank()) {
                    int eq = v.indexOf('=');
                    String name = v.substring(0, eq).strip();
                    Path vdir = dir;
                    List<String> extra = new ArrayList<>();
                    for (String w : words(v.substring(eq + 1))) {
                        if (w.startsWith("--app=")) {
                            vdir = Path.of(w.substring("--app=".length())).toAbsolutePath();
                        } else {
                            extra.add(w);
                        }
                    }
                    List<String> flags = new ArrayList<>(common);
                    flags.add("-XX:AOTCache=" + vdir.resolve("app.aot"));
                    flags.addAll(extra);
                    variants.put(name, flags);
                    dirs.put(name, vdir);
                }
            }
        } else {
            System.err.println("  server-cold: no " + dir.resolve("app.aot") + " (package the server with -Paot): no AOT figures");
        }
        System.err.println("  server-cold variants: " + variants);
        Map<String, List<Map<String, Object>>> runs = new LinkedHashMap<>();
        try {
            // the variants alternate, rep by rep, so that drift on a shared machine falls on both
            for (int rep = 0; rep < reps; rep++) {
                for (var v : variants.entrySet()) {
                    runs.computeIfAbsent(v.getKey(), k -> new ArrayList<>())
                            .add(variant(v.getKey(), v.getValue(), dirs.getOrDefault(v.getKey(), dir), wrk, script,
                                    v.getKey().equals("aot") ? "warm-aot" + rep : rep == 0 && v.getKey().equals("plain") ? "warm" : null,
                                    rows));
                }
            }
        } finally {
            Files.deleteIfExists(script);
        }
        for (var e : runs.entrySet()) {
            rows.put(e.getKey(), medians(e.getValue()));
        }
        Map<String, Object> warm = rows.remove("warm");
        // the image's own flags warm too (the same process as aot's first burst, after the warm-up):
        // a flag that makes the first seconds faster by making the warm server slower shows here
        List<Map<String, Object>> warmAots = new ArrayList<>();
        for (int rep = 0; rep < reps; rep++) {
            Map<String, Object> w = rows.remove("warm-aot" + rep);
            if (w != null) {
                warmAots.add(w);
            }
        }
        Map<String, Object> warmAot = warmAots.isEmpty() ? null : warmMedians(warmAots);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "server-cold");
        r.put("params", Map.of("wrk", "-t2 -c64, 3 x 5 s from ready", "burst_jobs", BURST, "server", dir.toString(),
                "reps", reps, "figures", "medians over the reps, variants alternating"));
        r.putAll(rows);
        r.put("warm", warm);
        r.put("common_flags", common);
        if (warmAot != null) {
            r.put("warm_aot", warmAot);
            Map<String, Object> row = rows.get("aot");
            row.put("enqueue_ratio_to_warm_aot", BenchApp.round(((Number) row.get("enqueue_15s_rps")).doubleValue()
                    / ((Number) warmAot.get("enqueue_15s_rps")).doubleValue(), 2));
            row.put("burst_ratio_to_warm_aot", BenchApp.round(((Number) row.get("burst_jps")).doubleValue()
                    / ((Number) warmAot.get("burst_jps")).doubleValue(), 2));
        }
        double warmRps = ((Number) warm.get("enqueue_15s_rps")).doubleValue();
        double warmBurst = ((Number) warm.get("burst_jps")).doubleValue();
        boolean ok = true;
        for (String v : rows.keySet()) {
            Map<String, Object> row = rows.get(v);
            row.put("ready_ratio_to_plain", BenchApp.round((double) row.get("ready_ms") / (double) rows.get("plain").get("ready_ms"), 2));
            row.put("enqueue_ratio_to_warm", BenchApp.round(((Number) row.get("enqueue_15s_rps")).doubleValue() / warmRps, 2));
            row.put("burst_ratio_to_warm", BenchApp.round(((Number) row.get("burst_jps")).doubleValue() / warmBurst, 2));
            ok &= Boolean.TRUE.equals(row.remove("ok"));
        }
        ok &= Boolean.TRUE.equals(warm.remove("ok"));
        if (warmAot != null) {
            ok &= Boolean.TRUE.equals(warmAot.remove("ok"));
        }
        r.put("ok", ok);
        app.emit(r);
        System.err.printf("  server-cold (packaged server, fresh process per figure, medians of %d runs; ratios: ready to plain,"
                + " rates to warm):%n", reps);
        System.err.printf("  %-6s %10s %7s %28s %10s %7s %12s %10s %7s%n", "", "ready ms", "ratio", "POST /jobs 5s windows /s",
                "15 s /s", "ratio", "burst jobs/s", "from exec", "ratio");
        for (var e : rows.entrySet()) {
            Map<String, Object> row = e.getValue();
            System.err.printf("  %-6s %10.0f %7.2f %28s %,10d %7.2f %,12d %,10d %7.2f%n", e.getKey(), row.get("ready_ms"),
                    row.get("ready_ratio_to_plain"), row.get("enqueue_windows_rps"), row.get("enqueue_15s_rps"),
                    row.get("enqueue_ratio_to_warm"), row.get("burst_jps"), row.get("burst_from_exec_jps"),
                    row.get("burst_ratio_to_warm"));
        }
        System.err.printf("  %-6s %10s %7s %28s %,10d %7s %,12d %10s %7s%n", "warm", "-", "-", warm.get("enqueue_windows_rps"),
                warm.get("enqueue_15s_rps"), "1.00", warm.get("burst_jps"), "-", "1.00");
        if (warmAot != null) {
            System.err.printf("  %-6s %10s %7s %28s %,10d %7s %,12d %10s %7s%n", "warm-aot", "-", "-",
                    warmAot.get("enqueue_windows_rps"), warmAot.get("enqueue_15s_rps"), "-", warmAot.get("burst_jps"), "-", "-");
            System.err.printf("  aot against warm-aot (the image's flags, warm: each aot burst process after the warm-up, median of"
                    + " %d): POST /jobs first 15 s %.2fx, burst %.2fx; warm-aot runs: POST /jobs 15 s /s %s, burst jobs/s %s%n",
                    warmAots.size(), rows.get("aot").get("enqueue_ratio_to_warm_aot"), rows.get("aot").get("burst_ratio_to_warm_aot"),
                    warmAots.stream().map(x -> x.get("enqueue_15s_rps")).toList(), warmAots.stream().map(x -> x.get("burst_jps")).toList());
        }
        System.err.printf("  JVM flags of every variant (BENCH_COLD_FLAGS): %s%n", common);
        for (var e : runs.entrySet()) {
            System.err.printf("  %s runs: ready ms %s, POST /jobs 15 s /s %s (non-2xx %s, wrk timeouts/socket errors %s),"
                    + " burst jobs/s %s (delivered %s)%n", e.getKey(),
                    e.getValue().stream().map(x -> x.get("ready_ms")).toList(),
                    e.getValue().stream().map(x -> x.get("enqueue_15s_rps")).toList(),
                    e.getValue().stream().map(x -> x.get("wrk_non2xx")).toList(),
                    e.getValue().stream().map(x -> x.get("wrk_socket_errors")).toList(),
                    e.getValue().stream().map(x -> x.get("burst_jps")).toList(),
                    e.getValue().stream().map(x -> x.get("burst_delivered")).toList());
        }
        for (var e : rows.entrySet()) {
            System.err.printf("  %s first 15 s: JIT %s, classes loaded %s, server CPU s per window %s%n", e.getKey(),
                    e.getValue().get("jit_s_per_window"), e.getValue().get("classes_per_window"), e.getValue().get("cpu_s_per_window"));
        }
    }

    /** {@code m} with "ok" (every rep's) and every rep's figures under "runs". */
    private static Map<String, Object> withRuns(Map<String, Object> m, List<Map<String, Object>> runs) {
        m.put("ok", runs.stream().allMatch(r -> Boolean.TRUE.equals(r.get("ok"))));
        m.put("runs", runs.stream().map(r -> {
            Map<String, Object> c = new LinkedHashMap<>(r);
            c.remove("ok");
            return c;
        }).toList());
        return m;
    }

    /** The warm figures' medians over the reps, with every rep's under "runs". */
    private static Map<String, Object> warmMedians(List<Map<String, Object>> runs) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("enqueue_15s_rps", Math.round(median(runs.stream().map(r -> ((Number) r.get("enqueue_15s_rps")).doubleValue()).toList())));
        m.put("burst_jps", Math.round(median(runs.stream().map(r -> ((Number) r.get("burst_jps")).doubleValue()).toList())));
        List<Long> w = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int at = i;
            w.add(Math.round(median(runs.stream().map(r -> ((Number) ((List<?>) r.get("enqueue_windows_rps")).get(at)).doubleValue()).toList())));
        }
        m.put("enqueue_windows_rps", w);
        return withRuns(m, runs);
    }

    /**
     * The median of each figure over the reps (the windows: each window's median), with every
     * rep's figures under "runs".
     */
    private static Map<String, Object> medians(List<Map<String, Object>> runs) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (String k : List.of("ready_ms", "enqueue_15s_rps", "burst_jps", "burst_from_exec_jps", "burst_ready_ms")) {
            m.put(k, median(runs.stream().map(r -> ((Number) r.get(k)).doubleValue()).toList()));
        }
        m.put("ready_ms", BenchApp.round((double) m.get("ready_ms"), 0));
        for (String k : List.of("enqueue_windows_rps", "jit_s_per_window", "classes_per_window", "cpu_s_per_window")) {
            List<Double> w = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                int at = i;
                w.add(BenchApp.round(median(runs.stream().map(r -> ((List<?>) r.get(k)).get(at)).map(x -> ((Number) x).doubleValue())
                        .toList()), 2));
            }
            m.put(k, k.equals("enqueue_windows_rps") || k.equals("classes_per_window")
                    ? w.stream().map(Math::round).toList() : w);
        }
        m.put("enqueue_15s_rps", Math.round((double) m.get("enqueue_15s_rps")));
        m.put("burst_jps", Math.round((double) m.get("burst_jps")));
        m.put("burst_from_exec_jps", Math.round((double) m.get("burst_from_exec_jps")));
        return withRuns(m, runs);
    }

    /**
     * The JVM options of the image's command line ({@code src/main/docker/Dockerfile.jvm}'s
     * ENTRYPOINT, between {@code java} and {@code -jar}), its cache given as {@code cache}: the
     * "aot" variant is what a replica started from the image runs. Without the Dockerfile (the
     * benchmark run outside the repository's root), the cache alone.
     */
    static List<String> imageFlags(Path cache) throws IOException {
        Path dockerfile = Path.of("src/main/docker/Dockerfile.jvm");
        List<String> flags = new ArrayList<>();
        if (!Files.exists(dockerfile)) {
            System.err.println("  server-cold: no " + dockerfile + " here: the aot variant runs the cache alone");
            flags.add("-XX:AOTCache=" + cache);
            return flags;
        }
        String entrypoint = Files.readAllLines(dockerfile).stream().filter(l -> l.startsWith("ENTRYPOINT "))
                .reduce((a, b) -> b).orElseThrow(() -> new IllegalStateException("no ENTRYPOINT in " + dockerfile));
        List<String> words = new ArrayList<>();
        new com.fasterxml.jackson.databind.ObjectMapper().readTree(entrypoint.substring("ENTRYPOINT ".length()))
                .forEach(n -> words.add(n.asText()));
        for (String w : words.subList(1, words.indexOf("-jar"))) {
            flags.add(w.startsWith("-XX:AOTCache=") ? "-XX:AOTCache=" + cache : w);
        }
        return flags;
    }

    private static List<String> words(String s) {
        return s.isBlank() ? List.of() : List.of(s.strip().split("\\s+"));
    }

    private static double median(List<Double> values) {
        List<Double> v = new ArrayList<>(values);
        v.sort(null);
        int n = v.size();
        return n % 2 == 1 ? v.get(n / 2) : (v.get(n / 2 - 1) + v.get(n / 2)) / 2;
    }

    /**
     * A variant's figures (each in a fresh process); with {@code warmRow} also its warm figures
     * (row {@code warmRow}: "warm" for plain's first rep, "warm-aot&lt;rep&gt;" for each of aot's).
     */
    private Map<String, Object> variant(String name, List<String> flags, Path appDir, String wrk, Path script, String warmRow,
            Map<String, Map<String, Object>> rows) throws Exception {
        Map<String, Object> row = new LinkedHashMap<>();
        boolean ok = true;
        // ready, then the first 15 s of single-job POST load
        app.flush();
        Server s = new Server(flags, appDir);
        try {
            s.awaitReady();
            row.put("ready_ms", BenchApp.round(s.readyMs, 0));
            ok &= enqueue(s, wrk, script, name, row);
        } finally {
            s.stop();
        }
        // a 20,000-job burst already due at exec
        app.flush();
        enqueueDue();
        s = new Server(flags, appDir);
        try {
            Map<String, Object> burst = drain(s, true);
            row.put("burst_jps", burst.get("jps"));
            row.put("burst_from_exec_jps", burst.get("from_exec_jps"));
            row.put("burst_delivered", burst.get("delivered"));
            row.put("burst_ready_ms", BenchApp.round(s.readyMs, 0));
            ok &= Boolean.TRUE.equals(burst.get("ok"));
            if (warmRow != null) {
                // warm-up: 30 s of POST load and a burst, then the warm figures in the same process
                WrkScenario.runWrk(wrk, script, 2, 64, 30, "post", "warmup", WRK_TOPIC, s.base, 0);
                app.flush();
                pausedBurst(s);
                app.flush();
                Map<String, Object> warm = new LinkedHashMap<>();
                Map<String, Object> wb = pausedBurst(s);
                warm.put("burst_jps", wb.get("jps"));
                warm.put("burst_delivered", wb.get("delivered"));
                app.flush();
                boolean wok = Boolean.TRUE.equals(wb.get("ok")) & enqueue(s, wrk, script, "warm", warm);
                warm.put("ok", wok);
                rows.put(warmRow, warm);
            }
        } finally {
            s.stop();
        }
        row.put("ok", ok);
        System.err.printf("  server-cold %s: ready %.0f ms, POST /jobs %s /s, burst %s jobs/s%n", name, row.get("ready_ms"),
                row.get("enqueue_windows_rps"), row.get("burst_jps"));
        return row;
    }

    /** Three 5 s wrk runs from now; rates per window and over the 15 s, JIT time, classes and CPU per window. */
    private boolean enqueue(Server s, String wrk, Path script, String runId, Map<String, Object> row) throws Exception {
        long pid = s.process.pid();
        List<Long> rps = new ArrayList<>();
        List<Double> jit = new ArrayList<>();
        List<Long> classes = new ArrayList<>();
        List<Double> cpu = new ArrayList<>();
        long total = 0, non2xx = 0, socketErrors = 0;
        double seconds = 0;
        double[] j0 = jstat(pid);
        double c0 = Stats.cpuSeconds(pid);
        for (int w = 0; w < 3; w++) {
            WrkScenario.WrkRun run = WrkScenario.runWrk(wrk, script, 2, 64, 5, "post", runId + w, WRK_TOPIC, s.base, 0);
            double[] j1 = jstat(pid);
            double c1 = Stats.cpuSeconds(pid);
            rps.add(Math.round(run.perSecond()));
            jit.add(BenchApp.round(j1[0] - j0[0], 2));
            classes.add(Math.round(j1[1] - j0[1]));
            cpu.add(BenchApp.round(c1 - c0, 2));
            j0 = j1;
            c0 = c1;
            total += run.requests();
            seconds += run.seconds();
            non2xx += run.non2xx();
            socketErrors += run.socketErrors();
        }
        // wrk counts a reply slower than its 2 s timeout as a socket error: kept, as a cold server's symptom
        row.put("wrk_non2xx", non2xx);
        row.put("wrk_socket_errors", socketErrors);
        row.put("enqueue_windows_rps", rps);
        row.put("enqueue_15s_rps", Math.round(total / seconds));
        row.put("jit_s_per_window", jit);
        row.put("classes_per_window", classes);
        row.put("cpu_s_per_window", cpu);
        return non2xx == 0;
    }

    /** {compilation time s, classes loaded} of a JVM, from jstat (zeros when jstat fails). */
    private static double[] jstat(long pid) {
        try {
            String jstat = Path.of(System.getProperty("java.home"), "bin", "jstat").toString();
            double time = Double.parseDouble(last(exec(jstat, "-compiler", Long.toString(pid)), 3));
            double loaded = Double.parseDouble(last(exec(jstat, "-class", Long.toString(pid)), 0));
            return new double[] { time, loaded };
        } catch (Exception e) {
            return new double[] { 0, 0 };
        }
    }

    private static String exec(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        return out;
    }

    /** Field {@code i} of the last line. */
    private static String last(String out, int i) {
        String[] lines = out.strip().split("\n");
        return lines[lines.length - 1].trim().split("\\s+")[i];
    }

    /** 20,000 jobs due now on the replica's topic, straight into Redis (the benchmark process does not serve it). */
    private void enqueueDue() {
        long now = System.currentTimeMillis();
        List<NewJob> chunk = new ArrayList<>(1000);
        for (int i = 0; i < BURST; i++) {
            chunk.add(new NewJob(TOPIC, Integer.toString(i), false, now, 0, BenchApp.PAYLOAD));
            if (chunk.size() == 1000) {
                app.jobs.scheduleAll(chunk);
                chunk = new ArrayList<>(1000);
            }
        }
        app.recorder.reset(BURST);
        HttpScenario.receiver.drainInto(app.recorder); // skip what earlier runs left in the records file
        app.recorder.reset(BURST);
    }

    /** The warm burst: the topic paused, 20,000 due jobs enqueued, resumed; drained by the running replica. */
    private Map<String, Object> pausedBurst(Server s) throws Exception {
        s.post("/topics/" + TOPIC + "/pause");
        enqueueDue();
        s.post("/topics/" + TOPIC + "/resume");
        return drain(s, false);
    }

    /** Waits until the receiver saw every job of the burst and Redis holds none; jobs/s first to last delivery. */
    private Map<String, Object> drain(Server s, boolean fresh) throws Exception {
        if (fresh) {
            s.awaitReady();
        }
        long deadline = System.currentTimeMillis() + 300_000;
        while (System.currentTimeMillis() < deadline) {
            HttpScenario.receiver.drainInto(app.recorder);
            if (app.recorder.distinct() == BURST && app.jobsInRedis(TOPIC) == 0) {
                break;
            }
            Thread.sleep(20);
        }
        long first = Long.MAX_VALUE, last = 0;
        for (int i = 0; i < BURST; i++) {
            long t = app.recorder.first(i);
            if (t > 0) {
                first = Math.min(first, t);
                last = Math.max(last, t);
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        int got = app.recorder.distinct();
        m.put("ok", got == BURST && app.jobsInRedis(TOPIC) == 0);
        m.put("delivered", got);
        m.put("jps", Math.round(got / Math.max(0.001, (last - first) / 1000.0)));
        if (fresh) {
            long execMs = System.currentTimeMillis() - Math.round((System.nanoTime() - s.startNanos) / 1e6);
            m.put("from_exec_jps", Math.round(got / Math.max(0.001, (last - execMs) / 1000.0)));
        }
        return m;
    }
}
