package io.delayq.bench;

import java.util.List;

import io.delayq.core.TopicControl;

/**
 * Scenario {@code flow} (issue 20): what a concurrency cap and groups cost. One run measures the same burst
 * of N jobs (50,000; REST batches of 1,000, all due at once, no-op observer, one replica with the
 * default concurrency 64) on a topic without a cap, with a cap too large to bind (256: never more
 * than 64 run here) and with one that binds (16), each row as the other scenarios measure a burst:
 * throughput, Redis commands per job (INFO commandstats, scripts' inner commands included:
 * {@code redis_all_cmds_per_job}, added to the row after its line), Redis
 * CPU µs per job ({@code redis_cpu_ms_per_1k}) and Redis script µs per job. A row is a
 * {@link Row}. The groups rows put every job in a group (job i in group i mod G): one group on a
 * topic whose group-max-in-flight (100,000) never binds (the accounting alone: every job taken is
 * admitted, every ack ends an admission), then 100 and 10,000 groups with group-max-in-flight 1
 * (100 groups: at most 100 at once, each group's 500 jobs one after the other, held back and
 * released one by one; 10,000 groups: 5 jobs each).
 */
final class FlowScenario {
    static final String TOPIC = "bench-flow";

    /** The groups rows' topics (application.properties): group-max-in-flight 100,000 and 1. */
    static final String GROUPS_LOOSE = "bench-flow-groups-loose", GROUPS_ONE = "bench-flow-groups-one";

    /**
     * One measured configuration: its name, the cap set over REST (null: none), the number of groups
     * (0: jobs of no group), the topic.
     */
    record Row(String name, Integer maxInFlight, int groups, String topic) {
    }

    static final List<Row> ROWS = List.of(
            new Row("flow-plain", null, 0, TOPIC),
            new Row("flow-cap256", 256, 0, TOPIC),
            new Row("flow-cap16", 16, 0, TOPIC),
            new Row("flow-groups1", null, 1, GROUPS_LOOSE),
            new Row("flow-groups100", null, 100, GROUPS_ONE),
            new Row("flow-groups10000", null, 10_000, GROUPS_ONE));

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
            app.pendingFields.put("group_max_in_flight", row.groups() == 0 ? "none"
                    : row.topic().equals(GROUPS_LOOSE) ? 100_000 : 1);
            app.groups = row.groups();
            long before = commandCalls();
            try {
                app.measure(row.name(), row.topic(), app.o.n(), 0, app.o.start() * 1000L, true, true, 0);
            } finally {
                app.groups = 0;
            }
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
