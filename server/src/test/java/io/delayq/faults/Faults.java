package io.delayq.faults;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;

import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.Topics;

/** What the fault tests share: starting replicas, enqueueing a batch, looking at a topic in Redis. */
final class Faults {
    /** The short lease of the fault tests: a fault of a few seconds outlasts it. */
    static final long LEASE_MS = 6000;
    static final long HEARTBEAT_MS = 2000;

    private Faults() {
    }

    /** Lease and heartbeat of the fault tests, and the settings of one HTTP-target topic of a replica. */
    static Map<String, String> leaseSettings() {
        return Map.of("delayq.dispatch.lease", LEASE_MS + "ms", "delayq.dispatch.heartbeat", HEARTBEAT_MS + "ms");
    }

    /**
     * An HTTP-target topic whose jobs may run long: the call's timeout and the attempt timeout far
     * above any job of the tests, so that a job running 10 s (or held through a fault) never times out.
     */
    static Map<String, String> topic(String topic, String url, int concurrency) {
        String t = "delayq.topics." + topic;
        return Map.of(t + ".http.url", url, t + ".http.timeout", "120s", t + ".attempt-timeout", "120s",
                t + ".concurrency", Integer.toString(concurrency));
    }

    @SafeVarargs
    static Map<String, String> merge(Map<String, String>... maps) {
        Map<String, String> all = new java.util.HashMap<>();
        for (Map<String, String> m : maps) {
            all.putAll(m);
        }
        return all;
    }

    /** Starts {@code n} replicas at once (a JVM start is mostly waiting: two cores start three in the time of two). */
    static List<AppProcess> startAll(int n, IntFunction<AppProcess> start) {
        List<CompletableFuture<AppProcess>> starting = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            int index = i;
            starting.add(CompletableFuture.supplyAsync(() -> start.apply(index)));
        }
        List<AppProcess> started = new ArrayList<>();
        RuntimeException failure = null;
        for (CompletableFuture<AppProcess> f : starting) {
            try {
                started.add(f.join());
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
        }
        if (failure != null) {
            started.forEach(AppProcess::close);
            throw failure;
        }
        return started;
    }

    /** The body of {@code POST /jobs/batch}: {@code n} jobs {@code prefix0..}, due {@code delayMs} from now. */
    static String batch(String topic, String prefix, int n, long delayMs) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < n; i++) {
            b.append(i == 0 ? "" : ",").append("{\"topic\":\"").append(topic).append("\",\"id\":\"").append(prefix)
                    .append(i).append("\",\"delayMs\":").append(delayMs).append('}');
        }
        return b.append(']').toString();
    }

    /** Jobs, leases and dead jobs of a one-partition topic, as Redis holds them. */
    static String topicState(Resp r, String topic) {
        String k = Topics.keys(topic);
        return "jobs " + r.num("HLEN", k + "jobs") + ", inflight " + r.num("ZCARD", k + "inflight") + ", dead "
                + r.num("ZCARD", k + "dead");
    }

    /** No job of a one-partition topic left in Redis: none scheduled, none leased. */
    static boolean topicEmpty(Resp r, String topic) {
        String k = Topics.keys(topic);
        return r.num("HLEN", k + "jobs") == 0 && r.num("ZCARD", k + "inflight") == 0;
    }
}
