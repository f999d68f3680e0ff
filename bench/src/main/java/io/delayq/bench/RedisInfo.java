package io.delayq.bench;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.delayq.dev.Resp;

/**
 * One INFO snapshot of the Redis under test, summed over its nodes (the masters of a cluster),
 * with each node's CPU kept apart. Redis counts our own INFO calls in
 * {@code total_commands_processed}; {@link #commandsSince} subtracts them.
 */
record RedisInfo(long commands, long usedMemory, long clientsMemory, double cpuSeconds, long evalCalls, long evalUsec,
        long atMs, double[] cpuByNode, int nodes) {

    /** The Redis nodes to measure: {@code bench.redis.nodes}, a comma-separated list of loopback ports. */
    static List<Integer> ports() {
        List<Integer> ports = new ArrayList<>();
        for (String p : System.getProperty("bench.redis.nodes").split(",")) {
            ports.add(Integer.parseInt(p.trim()));
        }
        return ports;
    }

    static RedisInfo read() {
        List<Integer> ports = ports();
        long commands = 0, memory = 0, clients = 0, calls = 0, usec = 0;
        double cpu = 0;
        double[] byNode = new double[ports.size()];
        for (int n = 0; n < ports.size(); n++) {
            Map<String, String> v;
            try (Resp r = new Resp(ports.get(n))) {
                v = fields(r.str("INFO", "all"));
            }
            for (String cmd : new String[] { "cmdstat_evalsha", "cmdstat_eval" }) {
                String s = v.get(cmd);
                if (s != null) {
                    for (String kv : s.split(",")) {
                        if (kv.startsWith("calls=")) {
                            calls += Long.parseLong(kv.substring(6));
                        } else if (kv.startsWith("usec=")) {
                            usec += Long.parseLong(kv.substring(5));
                        }
                    }
                }
            }
            commands += Long.parseLong(v.get("total_commands_processed"));
            memory += Long.parseLong(v.get("used_memory"));
            clients += Long.parseLong(v.get("mem_clients_normal"));
            byNode[n] = Double.parseDouble(v.get("used_cpu_sys")) + Double.parseDouble(v.get("used_cpu_user"));
            cpu += byNode[n];
        }
        return new RedisInfo(commands, memory, clients, cpu, calls, usec, System.currentTimeMillis(), byNode, ports.size());
    }

    private static Map<String, String> fields(String text) {
        Map<String, String> v = new HashMap<>();
        for (String line : text.split("\r?\n")) {
            int c = line.indexOf(':');
            if (c > 0) {
                v.put(line.substring(0, c), line.substring(c + 1).trim());
            }
        }
        return v;
    }

    /**
     * {@code used_memory} less the normal clients' buffers ({@code mem_clients_normal}: query
     * buffers grown for a 1,000-job call, replies), which Redis shrinks once a connection has been
     * idle about 2 s: what the data holds, without the connections' passing state.
     */
    long dataMemory() {
        return usedMemory - clientsMemory;
    }

    /** Commands Redis ran between the two snapshots, less the INFO calls themselves ({@code infos} rounds of them). */
    long commandsSince(RedisInfo before, int infos) {
        return commands - before.commands - (long) infos * nodes;
    }

    /** Redis CPU seconds of each node between the two snapshots. */
    double[] cpuByNodeSince(RedisInfo before) {
        double[] d = new double[nodes];
        for (int i = 0; i < nodes; i++) {
            d[i] = cpuByNode[i] - before.cpuByNode[i];
        }
        return d;
    }
}
