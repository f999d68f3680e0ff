package io.delayq.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.dev.PostgresProcess;
import io.delayq.dev.RedisProcess;

/**
 * Scenario {@code outbox} (issue 34; on request only, alone: {@code bench/run.sh outbox [--seconds
 * 10] [--warmup 15] [--rates 100,2000] [--modes outbox-listen,outbox-poll,after-commit] [--batch-size 100]}):
 * the transactional outbox's relay delay and its cost per transaction. This process starts a
 * PostgreSQL (Debian's, {@link PostgresProcess}) and a redis-server, then runs this jar again as a
 * service process ({@link OutboxLoad}) once per mode, each against the same servers:
 * {@code outbox-listen} ({@code delayq.transactions=outbox}, woken by LISTEN/NOTIFY),
 * {@code outbox-poll} (the same with {@code delayq.outbox.listen=false}: the default 1 s poll only)
 * and {@code after-commit} (the plain enqueue after commit, the baseline of cost). In each, a
 * transaction writes one row of the service's own and enqueues one job due at once, at 100 and
 * 2,000 transactions a second (paced; what the machine reached is reported) for N seconds after a
 * warm-up at the same rate ({@code --warmup}, default 15 s) whose jobs must all have arrived first:
 * the figures are the steady state. A fresh JVM's JIT takes about 15 s to catch up on 2 cores (see
 * the server-cold scenario): at 2,000 tx/s after only 3 s of warm-up the relay fell seconds behind
 * (p99 6.8 s to Redis, one run on a quiet machine), and caught up once compiled.
 * Figures per row: delay from the commit's return to the enqueue script's arrival in Redis (seen
 * with MONITOR: the relay alone) and to the job's observer (relay, take and dispatch)
 * p50/p99/max, target p99 ≤ 200 ms with LISTEN/NOTIFY; the transaction's time (its own insert,
 * the enqueue, the commit) mean and p99; PostgreSQL's CPU per transaction (the postmaster and its
 * backends, the relay's queries included); the outbox rows' extra transaction time against
 * after-commit at the same rate. {@code BENCH_OUTBOX_LOG=DEBUG} makes the relay log each pass's
 * times and each wait.
 */
final class OutboxScenario {
    static final List<String> MODES = List.of("outbox-listen", "outbox-poll", "after-commit");
    private static final ObjectMapper JSON = new ObjectMapper();

    private OutboxScenario() {
    }

    static int run(List<String> args) throws Exception {
        int seconds = Integer.parseInt(option(args, "--seconds", "10"));
        int warmup = Integer.parseInt(option(args, "--warmup", "15"));
        String rates = option(args, "--rates", "100,2000");
        List<String> modes = List.of(option(args, "--modes", String.join(",", MODES)).split(","));
        String batchSize = option(args, "--batch-size", "100");
        List<Map<String, Object>> rows = new ArrayList<>();
        try (PostgresProcess pg = PostgresProcess.startEphemeral(); RedisProcess redis = RedisProcess.startEphemeral()) {
            System.err.printf("delayq bench: outbox, PostgreSQL pid %d, Redis pid %d, %d s per rate%n", pg.pid(), redis.pid(),
                    seconds);
            for (String mode : modes) {
                rows.addAll(child(mode, redis.uri(), pg, seconds, warmup, rates, batchSize));
            }
        }
        for (Map<String, Object> r : rows) {
            if (!"after-commit".equals(r.get("mode"))) {
                rows.stream().filter(b -> "after-commit".equals(b.get("mode")) && b.get("rate_target").equals(r.get("rate_target")))
                        .findFirst().ifPresent(b -> r.put("extra_tx_ms_vs_after_commit",
                                BenchApp.round((Double) r.get("tx_ms_mean") - (Double) b.get("tx_ms_mean"), 3)));
            }
        }
        Path out = Files.createDirectories(Path.of("bench", "results")).resolve("last-run.jsonl");
        StringBuilder lines = new StringBuilder();
        for (Map<String, Object> r : rows) {
            System.out.println(Report.json(r));
            lines.append(Report.json(r)).append('\n');
        }
        Files.writeString(out, lines, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                System.getenv("BENCH_APPEND") == null ? StandardOpenOption.TRUNCATE_EXISTING : StandardOpenOption.APPEND);
        table(rows);
        return rows.stream().allMatch(r -> Boolean.TRUE.equals(r.get("ok"))) ? 0 : 1;
    }

    /** One mode: this jar as a service process, its rows (one per rate) read from the file it writes. */
    private static String option(List<String> args, String name, String dflt) {
        int at = args.indexOf(name);
        return at >= 0 && at + 1 < args.size() ? args.get(at + 1) : dflt;
    }

    private static List<Map<String, Object>> child(String mode, String redisUri, PostgresProcess pg, int seconds, int warmup,
            String rates, String batchSize)
            throws IOException, InterruptedException {
        Path results = Files.createTempFile("delayq-bench-outbox-", ".jsonl");
        String javaCmd = ProcessHandle.current().info().command().orElse("java");
        String jar = Path.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator)[0]).toAbsolutePath().toString();
        Process p = new ProcessBuilder(javaCmd, "-Xmx1g", "-Ddelayq.outbox.batch-size=" + batchSize,
                // BENCH_OUTBOX_LOG=DEBUG: the relay logs each pass's times and each wait
                "-Dquarkus.log.category.\"io.delayq.outbox\".level=" + System.getenv().getOrDefault("BENCH_OUTBOX_LOG", "WARN"), "-jar", jar, "--outbox-load", mode, redisUri, pg.jdbcUrl(),
                Long.toString(pg.pid()), results.toString(), Integer.toString(seconds), rates, Integer.toString(warmup)).inheritIO().start();
        int rc = p.waitFor();
        List<Map<String, Object>> rows = new ArrayList<>();
        for (String line : Files.readAllLines(results)) {
            rows.add(JSON.readValue(line, new TypeReference<LinkedHashMap<String, Object>>() {
            }));
        }
        Files.deleteIfExists(results);
        if (rc != 0 || rows.isEmpty()) {
            Map<String, Object> failed = new LinkedHashMap<>();
            failed.put("schema", "delayq-bench/v1");
            failed.put("scenario", "outbox-" + mode);
            failed.put("mode", mode);
            failed.put("ok", false);
            failed.put("exit", rc);
            rows.add(failed);
        }
        return rows;
    }

    @SuppressWarnings("unchecked")
    private static void table(List<Map<String, Object>> rows) {
        String fmt = "%-24s %6s %8s %22s %22s %16s %8s %9s %5s%n";
        System.out.printf(fmt, "scenario", "tx/s", "reached", "to Redis p50/p99/max", "to observer p50/p99/max",
                "tx mean/p99 ms", "+tx ms", "pgCPU/tx", "lost");
        for (Map<String, Object> r : rows) {
            Map<String, Object> d = (Map<String, Object>) r.get("delay_ms");
            Map<String, Object> t = (Map<String, Object>) r.get("to_redis_ms");
            System.out.printf(fmt, r.get("scenario"), v(r, "rate_target"), v(r, "rate_reached"),
                    t == null ? "-" : t.get("p50") + "/" + t.get("p99") + "/" + t.get("max"),
                    d == null ? "-" : d.get("p50") + "/" + d.get("p99") + "/" + d.get("max"),
                    v(r, "tx_ms_mean") + "/" + v(r, "tx_ms_p99"), v(r, "extra_tx_ms_vs_after_commit"), v(r, "pg_cpu_ms_per_tx"),
                    v(r, "lost"));
        }
    }

    private static Object v(Map<String, Object> r, String key) {
        Object o = r.get(key);
        return o == null ? "-" : o;
    }
}
