package io.delayq.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.delayq.core.NewJob;

/**
 * Many topics on one replica (issue 13): the bench process serves {@link #topicCount()} HTTP-target
 * topics ({@code bench-t000}, ...; set up by {@link BenchMain#main} from {@code delayq.topics.<t>.http.url},
 * the way a user of the standalone server configures topics) with {@code delayq.partitions} each,
 * besides its usual ones, all POSTing to the local {@link HttpSink}. One run prints, for the
 * partitions served: the JVM's live threads (and how many are delayq takers), its RSS, the Redis
 * commands per second while nothing is due, and — many topics against the one topic
 * {@code bench-one} (also an HTTP target, same sink, same partitions), measured in the same run —
 * the lateness of a spread and the wake-up latency (an idle replica, a job enqueued due now, until
 * its HTTP target is called).
 */
final class TopicsScenario {
    /** Topics served for the scenario; 0 when it was not asked for (BenchMain reads the arguments). */
    static int topicCount() {
        return Integer.getInteger("bench.topics", 0);
    }

    /** The one-topic reference: an HTTP target too, posting to the same sink. */
    static final String TOPIC_ONE = "bench-one";

    static String topic(int t) {
        return String.format("bench-t%03d", t);
    }

    private final BenchApp app;

    TopicsScenario(BenchApp app) {
        this.app = app;
    }

    void run() throws Exception {
        int topics = topicCount();
        if (topics == 0) {
            throw new IllegalStateException("the topics scenario needs its topics configured at start-up: pass 'topics' on the command line");
        }
        int partitions = org.eclipse.microprofile.config.ConfigProvider.getConfig().getValue("delayq.partitions", Integer.class);
        boolean smoke = app.o.smoke();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "topics-" + topics + "x" + partitions);
        // The idle figure is a count of discrete commands (a poll every 1.25-1.75 s, an HSET every 20 s,
        // ...): a window of 30 s or more keeps its rounding small.
        int idleS = smoke ? Math.max(3, app.o.idleS()) : Math.max(30, app.o.idleS());
        int n = smoke ? 500 : 10_000;
        int windowMs = smoke ? 2000 : 10_000;
        int wakeSamples = smoke ? 10 : 100; // per side: 100 so that p99 is not simply the max
        r.put("params", Map.of("topics", topics, "partitions_per_topic", partitions, "partitions_served_by_them", topics * partitions,
                "spread_n", n, "spread_window_s", windowMs / 1000.0, "idle_s", idleS, "wake_samples", wakeSamples,
                "handler", "http-target"));

        // Idle: every taker asleep, nothing due; what the replica then costs Redis.
        flush();
        Thread.sleep(smoke ? 1000 : 3000);
        RedisInfo before = RedisInfo.read();
        double cpu0 = Stats.selfCpuSeconds();
        Thread.sleep(idleS * 1000L);
        RedisInfo after = RedisInfo.read();
        double seconds = (after.atMs() - before.atMs()) / 1000.0;
        double idlePerS = after.commandsSince(before, 1) / seconds;
        r.put("idle_cmds_per_s", BenchApp.round(idlePerS, 2));
        r.put("idle_delayq_cpu_ms_per_s", BenchApp.round((Stats.selfCpuSeconds() - cpu0) * 1000 / seconds, 2));
        threads(r);
        r.put("rss_mb", rssMb());

        // Wake-up latency, one topic and many interleaved so that the machine's noise hits both.
        List<Long> wakeOne = new ArrayList<>();
        List<Long> wakeMany = new ArrayList<>();
        app.recorder.reset(2 * wakeSamples);
        for (int s = 0; s < 2 * wakeSamples; s++) {
            boolean one = s % 2 == 0;
            String topic = one ? TOPIC_ONE : topic((s * 7919) % topics);
            Thread.sleep(smoke ? 150 : 200); // every taker asleep again
            long at = System.currentTimeMillis();
            app.jobs.scheduleAll(List.of(new NewJob(topic, Integer.toString(s), false, at, 0, BenchApp.PAYLOAD)));
            long deadline = at + 10_000;
            while (app.recorder.first(s) == 0 && System.currentTimeMillis() < deadline) {
                Thread.sleep(1);
            }
            long first = app.recorder.first(s);
            (one ? wakeOne : wakeMany).add(first == 0 ? -1 : first - at);
        }
        Map<String, Object> wake = new LinkedHashMap<>();
        wake.put("one_topic", Report.latency(sortedOf(wakeOne)));
        wake.put("many_topics", Report.latency(sortedOf(wakeMany)));
        r.put("wake_ms_by", wake);

        // Lateness of a spread: n jobs over the window on one topic, then the same over every topic.
        Map<String, Object> late = new LinkedHashMap<>();
        spread(n / 5, windowMs / 5, topics, null); // warm-up: the HTTP path's first connections and JIT
        double loop0 = takerLoopCpuMs();
        long[] one = spread(n, windowMs, 1, TOPIC_ONE);
        double loop1 = takerLoopCpuMs();
        long[] many = spread(n, windowMs, topics, null);
        double loop2 = takerLoopCpuMs();
        late.put("one_topic", Report.latency(one));
        late.put("many_topics", Report.latency(many));
        r.put("late_ms", Report.latency(many)); // the table's column: the many-topics spread
        r.put("late_ms_by", late);
        // CPU of the one thread that drives every taker, per 1,000 jobs: is it near its limit?
        r.put("taker_loop_cpu_ms_per_1k", Map.of("one_topic", BenchApp.round((loop1 - loop0) * 1000 / n, 1),
                "many_topics", BenchApp.round((loop2 - loop1) * 1000 / n, 1)));
        r.put("lost", (n - one.length) + (n - many.length) + (int) (wakeOne.stream().filter(v -> v < 0).count()
                + wakeMany.stream().filter(v -> v < 0).count()));
        r.put("dup", app.recorder.duplicates());
        long p99One = Stats.percentile(one, 99), p99Many = Stats.percentile(many, 99);
        long wakeP99One = Stats.percentile(sortedOf(wakeOne), 99), wakeP99Many = Stats.percentile(sortedOf(wakeMany), 99);
        r.put("late_p99_ratio", BenchApp.round(p99Many / (double) Math.max(1, p99One), 2));
        r.put("wake_p99_ratio", BenchApp.round(wakeP99Many / (double) Math.max(1, wakeP99One), 2));
        // The checks a smoke run can make: nothing lost or run twice (its idle window is short: the
        // idle scenario checks the bound in the smoke run). The full run also fails an idle
        // figure above the bound (1 command/s) and a taker thread per partition.
        boolean complete = (int) r.get("lost") == 0 && app.recorder.duplicates() == 0;
        r.put("ok", smoke ? complete
                : complete && BenchApp.idleWithinBound((String) r.get("scenario"), idlePerS)
                        && (int) r.get("delayq_taker_threads") == 0);
        app.emit(r);
    }

    /** n jobs due over the window, job i on topic i % topics (or on {@code single}); sorted lateness of those run. */
    private long[] spread(int n, long windowMs, int topics, String single) throws Exception {
        flush();
        app.recorder.reset(n);
        long t0 = System.currentTimeMillis() + 3000;
        Map<String, List<NewJob>> byTopic = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            String topic = single != null ? single : topic(i % topics);
            byTopic.computeIfAbsent(topic, t -> new ArrayList<>())
                    .add(new NewJob(topic, Integer.toString(i), false, t0 + i * windowMs / n, 0, BenchApp.PAYLOAD));
        }
        List<NewJob> all = new ArrayList<>(n);
        byTopic.values().forEach(all::addAll);
        for (int from = 0; from < n; from += 1000) {
            app.jobs.scheduleAll(all.subList(from, Math.min(n, from + 1000)));
        }
        long deadline = t0 + windowMs + 30_000;
        while (app.recorder.distinct() < n && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        Thread.sleep(500);
        long[] late = new long[n];
        int seen = 0;
        for (int i = 0; i < n; i++) {
            long f = app.recorder.first(i);
            if (f > 0) {
                late[seen++] = f - (t0 + i * windowMs / n);
            }
        }
        return Stats.sorted(late, seen);
    }

    /** Empties Redis (as the other scenarios do between runs). */
    private static void flush() throws InterruptedException {
        for (int port : RedisInfo.ports()) {
            try (io.delayq.dev.Resp r = new io.delayq.dev.Resp(port)) {
                r.call("FLUSHALL", "ASYNC");
                while (!r.str("INFO", "memory").contains("lazyfree_pending_objects:0")) {
                    Thread.sleep(100);
                }
            }
        }
        Thread.sleep(300);
    }

    private static long[] sortedOf(List<Long> values) {
        long[] a = values.stream().filter(v -> v >= 0).mapToLong(Long::longValue).toArray();
        java.util.Arrays.sort(a);
        return a;
    }

    /** CPU time (ms) of the delayq-takers thread so far; 0 when there is none. */
    private static double takerLoopCpuMs() {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("delayq-takers")) {
                return ManagementFactory.getThreadMXBean().getThreadCpuTime(t.threadId()) / 1e6;
            }
        }
        return 0;
    }

    /** Live threads of this JVM, and the delayq ones by name (a thread per taker would show as delayq-taker-*). */
    private static void threads(Map<String, Object> r) {
        r.put("jvm_live_threads", ManagementFactory.getThreadMXBean().getThreadCount());
        Map<String, Integer> delayq = new TreeMap<>();
        int takers = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            String name = t.getName();
            if (name.startsWith("delayq-taker-")) {
                takers++;
            }
            if (name.startsWith("delayq-")) {
                delayq.merge(name.replaceAll("-\\d+$", "-N"), 1, Integer::sum);
            }
        }
        r.put("delayq_taker_threads", takers);
        r.put("delayq_threads", delayq);
    }

    private static long rssMb() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("\\D", "")) / 1024;
                }
            }
        } catch (Exception e) {
            // not Linux
        }
        return -1;
    }
}
