package io.delayq.store;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/** By hand: Redis µs by command for enqueue and take of N jobs, none against mixed priorities. */
class PriorityCpuProbe {
    private static final HandBuiltStore STORE = HandBuiltStore.configured();
    private final JobQueue store = STORE.queue;
    private final Set<Integer> older = new HashSet<>();
    private int token;

    static Map<String, long[]> stats(Resp redis) {
        Map<String, long[]> out = new LinkedHashMap<>();
        for (String line : redis.str("INFO", "commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                long calls = Long.parseLong(line.replaceAll("^cmdstat_[^:]+:calls=(\\d+),.*", "$1"));
                long usec = Long.parseLong(line.replaceAll("^.*,usec=(\\d+),.*", "$1"));
                out.put(name, new long[] { calls, usec });
            }
        }
        return out;
    }

    static String diff(Map<String, long[]> a, Map<String, long[]> b, int n) {
        StringBuilder sb = new StringBuilder();
        b.forEach((k, v) -> {
            long[] o = a.getOrDefault(k, new long[2]);
            long c = v[0] - o[0], u = v[1] - o[1];
            if (c > 0 && !k.equals("info")) {
                sb.append(String.format(" %s:%d calls %.2f us/job;", k, c, u / (double) n));
            }
        });
        return sb.toString();
    }

    private void run(String what, int n, boolean mixed) {
        String topic = HandBuiltStore.fresh(what);
        Partition p = store.partitionsOf(topic).get(0);
        long now = System.currentTimeMillis();
        Map<String, long[]> s0, s1, s2;
        try (Resp redis = HandBuiltStore.resp()) {
            s0 = stats(redis);
        }
        for (int from = 0; from < n; from += 1000) {
            List<NewJob> jobs = new ArrayList<>();
            for (int i = from; i < Math.min(n, from + 1000); i++) {
                jobs.add(new NewJob(topic, Integer.toString(i), false, now + 2000, 0, "{\"n\":1234567890}", IfExists.KEEP, null, null, null, null, mixed ? 1 + i % 5 : null));
            }
            store.enqueue(p, jobs, "");
        }
        try (Resp redis = HandBuiltStore.resp()) {
            s1 = stats(redis);
        }
        while (System.currentTimeMillis() < now + 2100) {
            Thread.onSpinWait();
        }
        List<Lease> acks = List.of();
        int taken = 0;
        int size = Integer.getInteger("probe.take", 64);
        for (int i = 0; i < n / size + 2; i++) {
            TakeResult r = store.take(p, size, 30_000, "c" + (token++) + ":", older, acks, 0);
            acks = r.jobs().stream().map(TakenJob::lease).toList();
            taken += r.jobs().size();
        }
        try (Resp redis = HandBuiltStore.resp()) {
            s2 = stats(redis);
        }
        System.out.printf("%s taken %d%n  enqueue:%s%n  take:%s%n", what, taken, diff(s0, s1, n), diff(s1, s2, n));
    }

    @Test
    void probe() {
        int n = Integer.getInteger("probe.n", 50_000);
        for (int r = 0; r < 3; r++) {
            run("cpu-none" + r, n, false);
            run("cpu-mixed" + r, n, true);
        }
    }
}
