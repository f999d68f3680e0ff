package io.delayq.outbox.deployment;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.agroal.api.AgroalDataSource;
import io.delayq.core.Job;
import io.delayq.core.JobRequest;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.quarkus.test.QuarkusUnitTest;

/**
 * A measurement, not a test (no assertion; its name keeps it out of surefire's default run): the
 * delay from a transaction's commit to its job reaching an observer (relay + take), and the time
 * of the transaction itself (one row of the service's own, plus the enqueue), at 100 and 2,000
 * transactions a second (what the machine reaches is printed). Run one mode per JVM:
 * {@code ./mvnw test -pl outbox/deployment -Dtest=RelayDelayProbe [-Dprobe.listen=false]
 * [-Dprobe.poll=1s] [-Dprobe.mode=after-commit]}; lines start with {@code PROBE}. A first probe for
 * issue 34's benchmark, which belongs in bench/ (not written yet).
 */
class RelayDelayProbe {
    @RegisterExtension
    static final QuarkusUnitTest app = OwnPostgres.datasource(new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClasses(Orders.class, Runs.class, OwnPostgres.class, OwnRedis.class)))
            .overrideConfigKey("quarkus.datasource.jdbc.max-size", "40")
            .overrideConfigKey("quarkus.redis.hosts", OwnRedis.uri("probe"))
            .overrideConfigKey("quarkus.log.level", "WARN")
            .overrideConfigKey("delayq.outbox.listen", System.getProperty("probe.listen", "true"))
            .overrideConfigKey("delayq.outbox.poll-interval", System.getProperty("probe.poll", "1s"))
            .overrideConfigKey("delayq.transactions", System.getProperty("probe.mode", "outbox"));

    static final Map<String, Long> COMMITTED = new ConcurrentHashMap<>();
    static final Map<String, Long> ARRIVED = new ConcurrentHashMap<>();

    @ApplicationScoped
    static class Runs {
        void run(@Observes @JobTopic("probe") Job job) {
            ARRIVED.put(job.id(), System.nanoTime());
        }
    }

    @ApplicationScoped
    static class Orders {
        @Inject
        Jobs jobs;

        @Inject
        AgroalDataSource db;

        @Transactional
        void place(String id) throws Exception {
            try (Connection c = db.getConnection(); PreparedStatement p = c.prepareStatement("INSERT INTO probe_orders(id) VALUES (?)")) {
                p.setString(1, id);
                p.executeUpdate();
            }
            jobs.schedule(JobRequest.topic("probe").id(id));
        }
    }

    @Inject
    Orders orders;

    @Inject
    AgroalDataSource db;

    @Test
    void measure() throws Exception {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS probe_orders (id TEXT PRIMARY KEY)");
        }
        for (int rate : new int[] { 100, 2000 }) {
            run(rate, 3, "warm" + rate);
            AtomicLong txNanos = new AtomicLong();
            int done = run(rate, 10, "r" + rate, txNanos);
            long until = System.nanoTime() + 30_000_000_000L;
            String p = "r" + rate + "-";
            while (ARRIVED.keySet().stream().filter(k -> k.startsWith(p)).count() < done && System.nanoTime() < until) {
                Thread.sleep(50);
            }
            List<Long> d = new ArrayList<>();
            ARRIVED.forEach((id, at) -> {
                if (id.startsWith(p) && COMMITTED.containsKey(id)) {
                    d.add(at - COMMITTED.get(id));
                }
            });
            Collections.sort(d);
            System.out.printf("PROBE mode=%s listen=%s poll=%s target=%d tx/s achieved=%.0f tx/s n=%d p50=%.1f ms p99=%.1f ms tx=%.2f ms%n",
                    System.getProperty("probe.mode", "outbox"), System.getProperty("probe.listen", "true"),
                    System.getProperty("probe.poll", "1s"), rate, done / 10.0, d.size(),
                    d.get(d.size() / 2) / 1e6, d.get((int) (d.size() * 0.99)) / 1e6, txNanos.get() / 1e6 / done);
        }
    }

    private int run(int rate, int seconds, String prefix) throws Exception {
        return run(rate, seconds, prefix, new AtomicLong());
    }

    private int run(int rate, int seconds, String prefix, AtomicLong txNanos) throws Exception {
        int threads = rate <= 100 ? 2 : 32;
        long periodNanos = 1_000_000_000L * threads / rate;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        AtomicLong count = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int tt = t;
            ts.add(Thread.ofPlatform().start(() -> {
                long next = System.nanoTime();
                int i = 0;
                while (System.nanoTime() < end) {
                    String id = prefix + "-" + tt + "-" + i++;
                    try {
                        long t0 = System.nanoTime();
                        orders.place(id);
                        long t1 = System.nanoTime();
                        COMMITTED.put(id, t1);
                        txNanos.addAndGet(t1 - t0);
                        count.incrementAndGet();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                    next += periodNanos;
                    long wait = next - System.nanoTime();
                    if (wait > 0) {
                        java.util.concurrent.locks.LockSupport.parkNanos(wait);
                    }
                }
            }));
        }
        for (Thread t : ts) {
            t.join();
        }
        return (int) count.get();
    }
}
