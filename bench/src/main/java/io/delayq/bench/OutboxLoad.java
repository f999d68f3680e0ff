package io.delayq.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;

import io.agroal.api.AgroalDataSource;
import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.quarkus.runtime.QuarkusApplication;

/**
 * The service process of {@link OutboxScenario}: this jar with a PostgreSQL datasource and
 * {@code delayq.transactions} set by the mode, placing orders (one row of its own and one job on
 * topic {@value #TOPIC} per transaction) at each rate, and writing one JSON row per rate.
 * Arguments: mode, Redis URI, JDBC URL, postmaster pid, results file, seconds, rates, warm-up seconds.
 */
public class OutboxLoad implements QuarkusApplication {
    static final String TOPIC = "bench-outbox";
    /** Commit (the transaction's return) and first observer start of each job, System.nanoTime. */
    static final Map<String, Long> COMMITTED = new ConcurrentHashMap<>(), ARRIVED = new ConcurrentHashMap<>();
    static final AtomicInteger DUPLICATES = new AtomicInteger();
    /** When Redis first saw each job id (its enqueue script, read from MONITOR), System.nanoTime. */
    static final Map<String, Long> IN_REDIS = new ConcurrentHashMap<>();

    @Inject
    Orders orders;
    @Inject
    Instance<AgroalDataSource> db;

    /** The service's own transaction: its order row, and the job that closes it. */
    @ApplicationScoped
    public static class Orders {
        @Inject
        Jobs jobs;
        @Inject
        Instance<AgroalDataSource> db;

        @Transactional
        public void place(String id) throws Exception {
            try (Connection c = db.get().getConnection();
                    PreparedStatement p = c.prepareStatement("INSERT INTO bench_orders(id) VALUES (?)")) {
                p.setString(1, id);
                p.executeUpdate();
            }
            jobs.schedule(JobRequest.topic(TOPIC).id(id));
        }
    }

    /** The observer's record (BenchObservers): the first start of each id counts, later ones are duplicates. */
    static void arrived(String id) {
        if (ARRIVED.putIfAbsent(id, System.nanoTime()) != null) {
            DUPLICATES.incrementAndGet();
        }
    }

    @Override
    public int run(String... args) throws Exception {
        String mode = args[1];
        long postmaster = Long.parseLong(args[4]);
        Path out = Path.of(args[5]);
        int seconds = Integer.parseInt(args[6]);
        int warmup = args.length > 8 ? Integer.parseInt(args[8]) : 3;
        try (Connection c = db.get().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS bench_orders (id TEXT PRIMARY KEY)");
            s.execute("TRUNCATE bench_orders");
        }
        monitor(args[2], mode);
        for (String rateArg : args[7].split(",")) {
            int rate = Integer.parseInt(rateArg);
            int warm = load(rate, warmup, mode + "-warm" + rate + "-");
            long warmUntil = System.nanoTime() + 120_000_000_000L;
            while (arrivedWith(mode + "-warm" + rate + "-") < warm && System.nanoTime() < warmUntil) {
                Thread.sleep(20);
            }
            String prefix = mode + "-" + rate + "-";
            double pgCpu0 = pgCpu(postmaster);
            long[] tx = new long[rate * seconds * 2];
            long t0 = System.nanoTime();
            int done = load(rate, seconds, prefix, tx);
            double loadS = (System.nanoTime() - t0) / 1e9;
            long until = System.nanoTime() + 60_000_000_000L;
            while (arrivedWith(prefix) < done && System.nanoTime() < until) {
                Thread.sleep(20);
            }
            double pgCpu = pgCpu(postmaster) - pgCpu0;
            long[] delays = new long[COMMITTED.size()];
            int n = 0;
            for (Map.Entry<String, Long> e : COMMITTED.entrySet()) {
                Long at = ARRIVED.get(e.getKey());
                if (e.getKey().startsWith(prefix) && at != null) {
                    delays[n++] = (at - e.getValue()) / 1000; // µs
                }
            }
            long[] d = Stats.sorted(delays, n);
            long[] relays = new long[COMMITTED.size()];
            int m = 0;
            for (Map.Entry<String, Long> e : COMMITTED.entrySet()) {
                Long at = IN_REDIS.get(e.getKey());
                if (e.getKey().startsWith(prefix) && at != null) {
                    relays[m++] = (at - e.getValue()) / 1000;
                }
            }
            long[] rd = Stats.sorted(relays, m);
            long[] t = Stats.sorted(tx, done);
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("schema", "delayq-bench/v1");
            r.put("scenario", "outbox-" + (mode.startsWith("outbox-") ? mode.substring(7) : mode) + "-" + rate);
            r.put("mode", mode);
            r.put("params", Map.of("seconds", seconds, "warmup_seconds", warmup, "poll_interval", "1s", "pool_max", 40, "batch_size",
                    org.eclipse.microprofile.config.ConfigProvider.getConfig().getValue("delayq.outbox.batch-size", Integer.class)));
            r.put("rate_target", rate);
            r.put("rate_reached", Math.round(done / loadS));
            r.put("transactions", done);
            r.put("lost", done - n);
            r.put("dup", DUPLICATES.get());
            Map<String, Object> delay = new LinkedHashMap<>();
            delay.put("p50", ms(Stats.percentile(d, 50)));
            delay.put("p90", ms(Stats.percentile(d, 90)));
            delay.put("p99", ms(Stats.percentile(d, 99)));
            delay.put("max", ms(d.length == 0 ? -1 : d[d.length - 1]));
            r.put("delay_ms", delay);
            // Commit to the enqueue script's arrival in Redis: the relay alone (after-commit: the send).
            Map<String, Object> relay = new LinkedHashMap<>();
            relay.put("p50", ms(Stats.percentile(rd, 50)));
            relay.put("p99", ms(Stats.percentile(rd, 99)));
            relay.put("max", ms(rd.length == 0 ? -1 : rd[rd.length - 1]));
            relay.put("n", m);
            r.put("to_redis_ms", relay);
            long sum = 0;
            for (long v : t) {
                sum += v;
            }
            r.put("tx_ms_mean", BenchApp.round(sum / 1000.0 / Math.max(1, done), 3));
            r.put("tx_ms_p99", ms(Stats.percentile(t, 99)));
            r.put("pg_cpu_ms_per_tx", BenchApp.round(pgCpu * 1000 / Math.max(1, done), 3));
            r.put("outbox_rows_left", outboxRows());
            // The target: p99 <= 200 ms where the relay is woken (polling only is the fallback).
            r.put("ok", n == done && DUPLICATES.get() == 0 && (!mode.equals("outbox-listen") || (double) delay.get("p99") <= 200));
            Files.writeString(out, Report.json(r) + "\n", StandardOpenOption.APPEND);
        }
        return 0;
    }

    /**
     * Redis' MONITOR on a connection of its own: the first time a line names one of this run's job
     * ids is its enqueue script (a take names none, an ack comes later). Costs Redis little at
     * these rates; it is the one way to see the relay's share apart from the take.
     */
    private static void monitor(String redisUri, String mode) throws Exception {
        java.net.URI uri = java.net.URI.create(redisUri);
        java.net.Socket socket = new java.net.Socket(uri.getHost(), uri.getPort());
        socket.getOutputStream().write("MONITOR\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(socket.getInputStream(), java.nio.charset.StandardCharsets.UTF_8));
        java.util.regex.Pattern id = java.util.regex.Pattern.compile("\"(" + java.util.regex.Pattern.quote(mode) + "-[0-9]+-[0-9]+-[0-9]+)\"");
        Thread.ofPlatform().daemon().name("bench-outbox-monitor").start(() -> {
            try {
                for (String line; (line = in.readLine()) != null;) {
                    long now = System.nanoTime();
                    java.util.regex.Matcher mm = id.matcher(line);
                    while (mm.find()) {
                        IN_REDIS.putIfAbsent(mm.group(1), now);
                    }
                }
            } catch (java.io.IOException ended) {
                // the process ends
            }
        });
    }

    private static double ms(long micros) {
        return BenchApp.round(micros / 1000.0, 1);
    }

    private static long arrivedWith(String prefix) {
        return ARRIVED.keySet().stream().filter(k -> k.startsWith(prefix)).count();
    }

    private long outboxRows() {
        try (Connection c = db.get().getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM delayq_outbox")) {
            rs.next();
            return rs.getLong(1);
        } catch (Exception e) {
            return -1; // after-commit: no table
        }
    }

    /** CPU seconds of PostgreSQL: the postmaster and its backends (the pool keeps them alive). */
    private static double pgCpu(long postmaster) {
        return ProcessHandle.of(postmaster).map(p -> Stats.cpuSeconds(p.pid())
                + p.descendants().mapToDouble(c -> Stats.cpuSeconds(c.pid())).sum()).orElse(0.0);
    }

    private int load(int rate, int seconds, String prefix) throws Exception {
        return load(rate, seconds, prefix, new long[rate * seconds * 2]);
    }

    /**
     * Places orders at {@code rate} a second for {@code seconds}, each thread paced on its own
     * schedule (a late thread does not catch up in a burst); each transaction's µs into {@code tx}.
     */
    private int load(int rate, int seconds, String prefix, long[] tx) throws Exception {
        int threads = rate <= 100 ? 2 : 32;
        long periodNanos = 1_000_000_000L * threads / rate;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        AtomicInteger count = new AtomicInteger();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int tt = t;
            ts.add(Thread.ofPlatform().start(() -> {
                long next = System.nanoTime();
                int i = 0;
                while (System.nanoTime() < end) {
                    String id = prefix + tt + "-" + i++;
                    try {
                        long t0 = System.nanoTime();
                        orders.place(id);
                        long t1 = System.nanoTime();
                        COMMITTED.put(id, t1);
                        int k = count.getAndIncrement();
                        if (k < tx.length) {
                            tx[k] = (t1 - t0) / 1000;
                        }
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                    next += periodNanos;
                    long wait = next - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    }
                }
            }));
        }
        for (Thread t : ts) {
            t.join();
        }
        return Math.min(count.get(), tx.length);
    }
}
