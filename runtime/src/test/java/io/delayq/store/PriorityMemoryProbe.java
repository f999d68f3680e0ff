package io.delayq.store;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.NewJob;
import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;

/**
 * A measurement, not a test (its name keeps it out of the suite): where the Redis memory of issue
 * 33's burst goes, without priorities and with mixed ones (job i priority 1 + i mod 5), key by
 * key. The benchmark's burst as its scenario makes it: N jobs, ids "0".."N-1", the 16-byte
 * payload, one partition, batches of 1,000 sent 4 at a time, through the real enqueue script
 * ({@link JobQueue#enqueue}); on a redis-server of its own (DEBUG allowed), emptied before each
 * burst. Per burst: {@code used_memory} after it less before, over N, also without the client
 * connections' buffers ({@code mem_clients_normal}, query buffers grown for the 1,000-job calls
 * until Redis shrinks them), again after {@code probe.wait} ms idle; then every key's
 * {@code MEMORY USAGE ... SAMPLES 0}, encoding and hash table slots ({@code DEBUG HTSTATS-KEY}: two
 * tables while it rehashes, which Redis does a step per lookup of that key, never by itself for a
 * key's own table); then the same after lookups of absent members finished every rehash.
 * <pre>
 * ./mvnw -B test -pl runtime -Dtest=PriorityMemoryProbe -Dprobe.n=50000[,60000...] -Dprobe.reps=2 \
 *     -Dprobe.wait=2500 -Dprobe.out=/tmp/prio-mem.txt
 * </pre>
 */
class PriorityMemoryProbe {
    private static final String PAYLOAD = "\"xxxxxxxxxxxxxx\"";
    private static final Pattern TABLE = Pattern.compile("table size: (\\d+)\\s+number of elements: (\\d+)");

    @Test
    void probe() throws Exception {
        int reps = Integer.getInteger("probe.reps", 2);
        long wait = Long.getLong("probe.wait", 2500);
        StringBuilder report = new StringBuilder();
        try (RedisProcess redis = RedisProcess.start(RedisProcess.freePort(),
                List.of("--save", "", "--appendonly", "no", "--enable-debug-command", "yes"))) {
            HandBuiltStore store = HandBuiltStore.on(redis);
            store.layer.ensureLayout();
            try (Resp r = new Resp(redis.port())) {
                report.append("redis ").append(info(r, "server").get("redis_version")).append('\n');
                // Scripts loaded and the pool's connections open before anything is measured.
                burst(store, "warm", 3000, false);
                burst(store, "warm", 3000, true);
                for (String each : System.getProperty("probe.n", "50000").split(",")) {
                    int n = Integer.parseInt(each);
                    for (int rep = 0; rep < 2 * reps; rep++) {
                        boolean mixed = rep % 2 == 1;
                        r.call("FLUSHALL", "SYNC");
                        Map<String, String> m0 = info(r, "memory");
                        long t0 = System.nanoTime();
                        burst(store, "bench", n, mixed);
                        long ms = (System.nanoTime() - t0) / 1_000_000;
                        Map<String, String> m1 = info(r, "memory");
                        Thread.sleep(wait);
                        Map<String, String> m2 = info(r, "memory");
                        report.append(String.format("%n== n=%d %s, enqueued in %d ms: used_memory %.1f B/job (without client"
                                + " buffers %.1f); after %d ms idle %.1f (%.1f)%n", n, mixed ? "mixed" : "none", ms, perJob(m0, m1, n, false),
                                perJob(m0, m1, n, true), wait, perJob(m0, m2, n, false), perJob(m0, m2, n, true)));
                        long keys = keys(r, report, n, true);
                        report.append(String.format("  keys (MEMORY USAGE) %.1f B/job%n", keys / (double) n));
                        rehash(r);
                        Map<String, String> m3 = info(r, "memory");
                        report.append(String.format("  every table rehashed: used_memory %.1f B/job (without client buffers %.1f),"
                                + " keys %.1f B/job%n", perJob(m0, m3, n, false), perJob(m0, m3, n, true),
                                keys(r, report, n, false) / (double) n));
                    }
                }
            }
        }
        Files.writeString(Path.of(System.getProperty("probe.out", "/tmp/prio-mem.txt")), report.toString());
        System.out.println(report);
    }

    private static void burst(HandBuiltStore store, String topic, int n, boolean mixed) throws Exception {
        Partition p = store.queue.partitionsOf(topic).get(0);
        long runAt = System.currentTimeMillis() + 3_600_000;
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> sent = new ArrayList<>();
            for (int from = 0; from < n; from += 1000) {
                List<NewJob> chunk = new ArrayList<>();
                for (int i = from; i < Math.min(n, from + 1000); i++) {
                    chunk.add(new NewJob(topic, Integer.toString(i), false, runAt, 0, PAYLOAD, IfExists.KEEP, null, null, null,
                            null, mixed ? 1 + i % 5 : null));
                }
                sent.add(pool.submit(() -> store.queue.enqueue(p, chunk, "")));
            }
            for (Future<?> f : sent) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
    }

    /** Every key's bytes (and, when {@code show}, its line in the report); returns their sum. */
    private static long keys(Resp r, StringBuilder report, int n, boolean show) {
        long total = 0;
        for (Object k : new TreeSet<>(r.list("KEYS", "*").stream().map(Object::toString).toList())) {
            String key = k.toString();
            long bytes = r.num("MEMORY", "USAGE", key, "SAMPLES", "0");
            total += bytes;
            if (!show) {
                continue;
            }
            String type = r.str("TYPE", key);
            String enc = r.str("OBJECT", "ENCODING", key);
            StringBuilder tables = new StringBuilder();
            if (enc.equals("skiplist") || enc.equals("hashtable")) {
                Matcher m = TABLE.matcher(r.str("DEBUG", "HTSTATS-KEY", key));
                while (m.find()) {
                    tables.append('[').append(m.group(1)).append(" slots, ").append(m.group(2)).append(" in it] ");
                }
            }
            String len = type.equals("zset") ? Long.toString(r.num("ZCARD", key))
                    : type.equals("hash") ? Long.toString(r.num("HLEN", key)) : "-";
            report.append(String.format("  %-32s %-6s %-9s len %-7s %9d B %6.2f B/job %s%n", key, type, enc, len, bytes,
                    bytes / (double) n, tables));
        }
        return total;
    }

    /** Lookups of an absent member (a rehash step each) until no key's table is rehashing. */
    private static void rehash(Resp r) {
        List<Object> absent = new ArrayList<>();
        for (int j = 0; j < 1000; j++) {
            absent.add("\u0001absent" + j);
        }
        for (Object k : r.list("KEYS", "*")) {
            String key = k.toString();
            String type = r.str("TYPE", key);
            String enc = r.str("OBJECT", "ENCODING", key);
            if (!(enc.equals("skiplist") || enc.equals("hashtable")) || !(type.equals("zset") || type.equals("hash"))) {
                continue;
            }
            while (r.str("DEBUG", "HTSTATS-KEY", key).contains("Hash table 1")) {
                List<Object> call = new ArrayList<>(List.of(type.equals("zset") ? "ZMSCORE" : "HMGET", key));
                call.addAll(absent);
                r.call(call.toArray());
            }
        }
    }

    private static double perJob(Map<String, String> before, Map<String, String> after, int n, boolean withoutClients) {
        long d = lg(after, "used_memory") - lg(before, "used_memory");
        if (withoutClients) {
            d -= lg(after, "mem_clients_normal") - lg(before, "mem_clients_normal");
        }
        return d / (double) n;
    }

    private static Map<String, String> info(Resp r, String section) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String line : r.str("INFO", section).split("\r\n")) {
            int c = line.indexOf(':');
            if (c > 0) {
                m.put(line.substring(0, c), line.substring(c + 1));
            }
        }
        return m;
    }

    private static long lg(Map<String, String> m, String k) {
        return Long.parseLong(m.get(k));
    }
}
