package io.delayq.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

/** JSON lines and the closing table. */
final class Report {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Report() {
    }

    static Map<String, Object> latency(long[] sorted) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("min", sorted.length == 0 ? -1 : sorted[0]);
        m.put("p50", Stats.percentile(sorted, 50));
        m.put("p90", Stats.percentile(sorted, 90));
        m.put("p99", Stats.percentile(sorted, 99));
        m.put("max", sorted.length == 0 ? -1 : sorted[sorted.length - 1]);
        return m;
    }

    static String json(Map<String, Object> r) {
        try {
            return JSON.writeValueAsString(r);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    @SuppressWarnings("unchecked")
    static void table(List<Map<String, Object>> results) {
        String fmt = "%-22s %9s %10s %18s %5s %4s %8s %9s %9s %8s %9s%n";
        System.out.printf(fmt, "scenario", "enq j/s", "thru j/s", "late p50/p99/max", "lost", "dup", "cmd/job",
                "rCPU/1k", "B/job", "dqCPU/1k", "idle c/s");
        for (Map<String, Object> r : results) {
            Map<String, Object> late = (Map<String, Object>) r.get("late_ms");
            System.out.printf(fmt, r.get("scenario"), v(r, "enqueue_jps"), v(r, "throughput_jps"),
                    late == null ? "-" : late.get("p50") + "/" + late.get("p99") + "/" + late.get("max"), v(r, "lost"),
                    v(r, "dup"), v(r, "redis_cmds_per_job"), v(r, "redis_cpu_ms_per_1k"), v(r, "redis_mem_b_per_job"),
                    v(r, "delayq_cpu_ms_per_1k"), v(r, "idle_cmds_per_s"));
        }
        // Scenarios whose figure fits no column above (cancel, markcost) say it in a line of their own.
        for (Map<String, Object> r : results) {
            if (r.get("summary") != null) {
                System.out.printf("%-22s %s; target %s: %s%n", r.get("scenario"), r.get("summary"), r.get("target"),
                        Boolean.TRUE.equals(r.get("target_met")) ? "met" : "NOT met");
            }
        }
    }

    private static Object v(Map<String, Object> r, String key) {
        Object o = r.get(key);
        return o == null ? "-" : o;
    }
}
