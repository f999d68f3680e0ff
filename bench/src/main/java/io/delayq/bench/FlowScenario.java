package io.delayq.bench;

import java.util.List;

import io.delayq.core.TopicControl;

/**
 * Scenario {@code flow} (issue 20): what a concurrency cap costs. One run measures the same burst
 * of N jobs (50,000; REST batches of 1,000, all due at once, no-op observer, one replica with the
 * default concurrency 64) on a topic without a cap, with a cap too large to bind (256: never more
 * than 64 run here) and with one that binds (16), each row as the other scenarios measure a burst:
 * throughput, Redis commands per job (INFO commandstats, scripts' inner commands included:
 * {@code redis_all_cmds_per_job}, added to the row after its line), Redis
 * CPU µs per job ({@code redis_cpu_ms_per_1k}) and Redis script µs per job. A row is a
 * {@link Row}: groups (1, 100, 10,000 groups of a topic) are further rows of the same list once
 * enqueues carry a group; {@code groups} 1 is a topic without them.
 */
final class FlowScenario {
    static final String TOPIC = "bench-flow";

    /** One measured configuration: its name, the cap set over REST (null: none), the number of groups. */
    record Row(String name, Integer maxInFlight, int groups) {
    }

    static final List<Row> ROWS = List.of(
            new Row("flow-plain", null, 1),
            new Row("flow-cap256", 256, 1),
            new Row("flow-cap16", 16, 1));

    private final BenchApp app;
    private final TopicControl control;

    FlowScenario(BenchApp app, TopicControl control) {
        this.app = app;
        this.control = control;
    }

    /** Every command Redis ran so far, those inside scripts included (INFO commandstats; INFO itself left out). */
    private static long commandCalls() {
        long n = 0;
        for (int port : RedisInfo.ports()) {
            try (io.delayq.dev.Resp r = new io.delayq.dev.Resp(port)) {
                for (String line : r.str("INFO", "commandstats").split("\r?\n")) {
                    if (line.startsWith("cmdstat_") && !line.startsWith("cmdstat_info:")) {
                        String calls = line.substring(line.indexOf("calls=") + 6);
                        n += Long.parseLong(calls.substring(0, calls.indexOf(',')));
                    }
                }
            }
        }
        return n;
    }

    void run() throws Exception {
        for (Row row : ROWS) {
            // After the flush (it empties Redis, the operator's cap with it), before the jobs.
            app.flush();
            if (row.maxInFlight() != null) {
                control.setMaxInFlight(TOPIC, row.maxInFlight());
            }
            app.pendingFields.put("max_in_flight", row.maxInFlight() == null ? "none" : row.maxInFlight());
            app.pendingFields.put("groups", row.groups());
            long before = commandCalls();
            app.measure(row.name(), TOPIC, app.o.n(), 0, app.o.start() * 1000L, true, true, 0);
            long calls = commandCalls() - before;
            java.util.Map<String, Object> r = app.results.get(app.results.size() - 1);
            // Printed on a line of its own: the row's JSON line is out already.
            System.out.printf("%s: max-in-flight %s, %d groups: %.2f Redis commands per job (scripts' own included),"
                    + " %s Redis CPU µs per job, %s script µs per job, %s jobs/s%n", row.name(),
                    row.maxInFlight() == null ? "none" : row.maxInFlight(), row.groups(), calls / (double) app.o.n(),
                    r.get("redis_cpu_ms_per_1k"), r.get("redis_script_usec_per_job"), r.get("throughput_jps"));
            r.put("redis_all_cmds_per_job", BenchApp.round(calls / (double) app.o.n(), 2));
        }
        control.clearMaxInFlight(TOPIC);
    }
}
