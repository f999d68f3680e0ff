package io.delayq.bench;

import java.util.HashMap;
import java.util.Map;

import io.delayq.store.RedisGateway;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;

/**
 * One INFO snapshot of the Redis under test. Redis counts our own INFO calls in
 * {@code total_commands_processed}; {@link #commandsSince} subtracts them.
 */
record RedisInfo(long commands, long usedMemory, double cpuSeconds, long evalCalls, long evalUsec, long atMs) {

    static RedisInfo read(RedisGateway redis) {
        String text = redis.send(Request.cmd(Command.INFO).arg("all")).toString();
        Map<String, String> v = new HashMap<>();
        for (String line : text.split("\r?\n")) {
            int c = line.indexOf(':');
            if (c > 0) {
                v.put(line.substring(0, c), line.substring(c + 1).trim());
            }
        }
        long calls = 0, usec = 0;
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
        return new RedisInfo(Long.parseLong(v.get("total_commands_processed")), Long.parseLong(v.get("used_memory")),
                Double.parseDouble(v.get("used_cpu_sys")) + Double.parseDouble(v.get("used_cpu_user")), calls, usec,
                System.currentTimeMillis());
    }

    /** Commands Redis ran between the two snapshots, less the INFO calls themselves ({@code infos} of them). */
    long commandsSince(RedisInfo before, int infos) {
        return commands - before.commands - infos;
    }
}
