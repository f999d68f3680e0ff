package io.delayq.bench;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayq.core.NewJob;

/**
 * Scenario {@code cancel} (issue 32): how long a cancel of a running job takes to end its attempt,
 * with default settings, over 3 replicas (this process and 2 replica processes of the same jar,
 * as the replicas scenario starts them). Rounds of 30 jobs due now on topic {@value #TOPIC}
 * (concurrency 10 per replica, so each replica holds 10; a synchronous observer that would sleep
 * two minutes), each round once all 30 run: {@code DELETE /jobs/{t}/{id}} of each, one after the
 * other, through this process' REST API (202 expected). The latency of one cancel runs from just
 * before its DELETE is sent (the client's clock) to the moment its observer's sleep was interrupted
 * (the attempt's own clock: every process is on this host). N cancels (200),
 * p50/p99/max; target p99 ≤ 1 s. Then none of them may run again and none may be left in Redis.
 * On request only, not in the smoke set: a smoke-sized try (30 cancels, two replica processes
 * to start) took 46 s on a loaded machine.
 */
final class CancelScenario {
    static final String TOPIC = "bench-cancel";
    private static final int ROUND = 30;
    private static final long TARGET_P99_MS = 1000;
    private final BenchApp app;
    private final int n;

    CancelScenario(BenchApp app, int n) {
        this.app = app;
        this.n = n;
    }

    void run() throws Exception {
        app.flush();
        List<Replica> replicas = new ArrayList<>();
        long[] issued = new long[n];
        int refused = 0;
        try {
            // Both at once: a replica's start-up is most of a small run's time.
            List<java.util.concurrent.Future<Replica>> starting = new ArrayList<>();
            try (var pool = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                for (int r = 0; r < 2; r++) {
                    int index = r;
                    starting.add(pool.submit(() -> Replica.start(index)));
                }
            }
            for (var f : starting) {
                replicas.add(f.get());
            }
            app.recorder.reset(n);
            for (int from = 0; from < n; from += ROUND) {
                int to = Math.min(n, from + ROUND);
                long now = System.currentTimeMillis();
                List<NewJob> round = new ArrayList<>();
                for (int i = from; i < to; i++) {
                    round.add(new NewJob(TOPIC, Integer.toString(i), false, now, 0, BenchApp.PAYLOAD));
                }
                app.jobs.scheduleAll(round);
                int running = to;
                if (!await(replicas, 60_000, () -> app.recorder.distinct() >= running)) {
                    throw new IllegalStateException("cancel: only " + app.recorder.distinct() + " of " + to + " jobs started");
                }
                List<Integer> order = new ArrayList<>();
                for (int i = from; i < to; i++) {
                    order.add(i);
                }
                Collections.shuffle(order);
                for (int i : order) {
                    issued[i] = System.currentTimeMillis();
                    HttpResponse<String> resp = app.http.send(HttpRequest.newBuilder(URI.create(app.base + "/jobs/" + TOPIC + "/" + i))
                            .DELETE().build(), HttpResponse.BodyHandlers.ofString());
                    if (resp.statusCode() != 202) {
                        refused++;
                        System.err.printf("cancel: DELETE of job %d answered %d %s%n", i, resp.statusCode(), resp.body());
                    }
                }
                int first = from;
                await(replicas, 30_000, () -> {
                    for (int i = first; i < to; i++) {
                        if (app.recorder.ended(i) == 0) {
                            return false;
                        }
                    }
                    return true;
                });
            }
            // Cancelled jobs leave: none runs again, none stays (the attempts end, then the holders remove them).
            await(replicas, 10_000, () -> app.jobsInRedis(TOPIC) == 0);
            Thread.sleep(1000);
            replicas.forEach(rep -> rep.drainInto(app.recorder));
        } finally {
            replicas.forEach(Replica::stop);
        }
        long[] ms = new long[n];
        int ended = 0;
        int[] byReplica = new int[3];
        for (int i = 0; i < n; i++) {
            if (app.recorder.ended(i) > 0) {
                ms[ended++] = app.recorder.ended(i) - issued[i];
                byReplica[app.recorder.holder(i)]++;
            }
        }
        long[] sorted = Stats.sorted(ms, ended);
        long left = app.jobsInRedis(TOPIC);
        long p99 = Stats.percentile(sorted, 99);
        boolean met = ended == n && p99 <= TARGET_P99_MS;
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "cancel");
        r.put("params", Map.of("n", n, "replicas", 3, "round", ROUND, "concurrency_per_replica", 10,
                "observer", "sync, interrupted", "settings", "default"));
        r.put("ok", met && refused == 0 && left == 0 && app.recorder.duplicates() == 0);
        r.put("cancel_ms", Report.latency(sorted));
        r.put("target_p99_ms", TARGET_P99_MS);
        r.put("target_met", met);
        r.put("ended", ended);
        r.put("not_ended", n - ended);
        r.put("delete_not_202", refused);
        r.put("held_by_replica", List.of(byReplica[0], byReplica[1], byReplica[2]));
        r.put("left_in_redis", left);
        r.put("dup", app.recorder.duplicates());
        r.put("summary", String.format("DELETE to attempt's end p50 %d / p99 %d / max %d ms over %d cancels",
                Stats.percentile(sorted, 50), p99, sorted.length == 0 ? -1 : sorted[sorted.length - 1], ended));
        r.put("target", "p99 <= 1000 ms");
        app.emit(r);
    }

    private boolean await(List<Replica> replicas, long ms, java.util.function.BooleanSupplier done) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        while (true) {
            replicas.forEach(rep -> rep.drainInto(app.recorder));
            if (done.getAsBoolean()) {
                return true;
            }
            if (System.currentTimeMillis() > deadline) {
                return false;
            }
            Thread.sleep(10);
        }
    }
}
