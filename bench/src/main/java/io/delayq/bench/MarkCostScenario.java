package io.delayq.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayq.core.DelayqConfig;
import io.delayq.store.JobQueue;
import io.delayq.store.Keys;
import io.delayq.store.RedisGateway;
import io.delayq.store.Scripts;
import io.delayq.store.StoreLayer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/**
 * Scenario {@code markcost} (issue 32): what the cancel mark costs the hot path. Today's take, ack
 * and extend scripts (and lib.lua) against those of commit {@value #BASE}, the base before issue
 * 32's work, read from git at run time ({@code git show BASE:runtime/src/main/resources/lua/...},
 * so the repository must be a git clone with that commit), on the same Redis in the same run: the
 * earlier ones run through a second store built by hand on the same gateway, keys and config
 * ({@link Scripts}' source seam), its other scripts today's (they are not run). Adapted to today's
 * store, which calls them: the earlier lib.lua reads the day shards from KEYS[24] on, today's store
 * passes them from KEYS[27] (the outbox's relayed set, the group rate limit's two keys came after
 * the base): that one line is moved; the earlier take reads its acks from ARGV[A+13] (today's place,
 * after the expired jobs' burial flags and the group rate limit) and answers "no expired, none
 * trimmed" where today's reply has those two lists.
 * Each round enqueues N jobs due now (today's enqueue, one partition's calls of 1,000, a topic no
 * replica serves) and takes them all 100 per call, each take carrying the previous take's acks
 * (as the taker does; {@link RedisCostScenario#takeAll}): Redis µs per job taken and acked (INFO
 * commandstats EVALSHA usec, which also counts this replica's own idle polls) and the take-and-ack
 * throughput of one caller (jobs/s, wall clock). Rounds alternate today, base, base, today, ... so
 * that drift (a machine whose load changes) falls on both alike; the medians are compared. Target:
 * today's µs per job within 5 % of the base's, and its throughput at least 95 % of it.
 */
final class MarkCostScenario {
    /** The base before issue 32's work. */
    static final String BASE = "3f9bb42";
    private static final String TOPIC = "bench-markcost";
    private static final List<String> FROM_BASE = List.of("lib", "take", "ack", "extend");
    private final JobQueue today;
    private final JobQueue base;
    private final int n;
    private final int rounds;

    MarkCostScenario(JobQueue today, JobQueue base, int n, int rounds) {
        this.today = today;
        this.base = base;
        this.n = n;
        this.rounds = rounds;
    }

    /** A store whose lib, take, ack and extend scripts are those of {@code commit}, read from git. */
    static JobQueue storeOf(String commit, RedisGateway gateway, Keys keys, DelayqConfig config) throws IOException {
        Map<String, String> old = new LinkedHashMap<>();
        for (String name : FROM_BASE) {
            old.put(name, gitShow(commit, "runtime/src/main/resources/lua/" + name + ".lua"));
        }
        String shards = "for i = 1, shard_count do shard_of_day[tonumber(ARGV[1 + i])] = KEYS[23 + i] end";
        if (!old.get("lib").contains(shards)) {
            throw new IllegalStateException("lib.lua of " + commit + " does not read its day shards as expected");
        }
        old.put("lib", old.get("lib").replace(shards, shards.replace("KEYS[23 + i]", "KEYS[26 + i]")));
        // Today's take is given two more ARGV before its acks (the burial's flag and bounds for expired
        // jobs, the group rate limit: the acks start at ARGV[A+13], not A+11), and its reply two more
        // counts after the stale ids (expired ids, ids trimmed from the dead set): the base has
        // neither, so it reads its acks from their new place and answers both as none.
        String acks = "ack_leases(A + 12, tonumber(ARGV[A + 11]),";
        String staleIds = "for _, id in ipairs(stale) do out[#out + 1] = id end\n";
        if (!old.get("take").contains(acks) || !old.get("take").contains(staleIds)) {
            throw new IllegalStateException("take.lua of " + commit + " does not read its acks or answer as expected");
        }
        old.put("take", old.get("take").replace(acks, "ack_leases(A + 14, tonumber(ARGV[A + 13]),")
                .replace(staleIds, staleIds + "out[#out + 1] = 0\nout[#out + 1] = 0\n"));
        Scripts scripts = new Scripts(gateway, new SimpleMeterRegistry(), name -> old.getOrDefault(name, Scripts.read(name)));
        return new JobQueue(new StoreLayer(gateway, scripts, keys, config));
    }

    private static String gitShow(String commit, String path) throws IOException {
        Process git = new ProcessBuilder("git", "show", commit + ":" + path).redirectErrorStream(true).start();
        String text = new String(git.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (git.waitFor() != 0) {
                throw new IllegalStateException("git show " + commit + ":" + path + " failed (markcost needs the git clone): " + text);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
        return text;
    }

    Map<String, Object> run() throws Exception {
        List<Double> usToday = new ArrayList<>(), usBase = new ArrayList<>(), jpsToday = new ArrayList<>(), jpsBase = new ArrayList<>();
        boolean allTaken = true;
        // Not counted: the first calls load the scripts (EVAL once) and compile the Java path.
        measure(today);
        measure(base);
        for (int round = 0; round < rounds; round++) {
            // today, base, base, today, today, base, ...
            boolean todayFirst = round % 2 == 0;
            for (boolean isToday : new boolean[] { todayFirst, !todayFirst }) {
                double[] m = measure(isToday ? today : base);
                allTaken &= m[2] == n;
                (isToday ? usToday : usBase).add(m[0]);
                (isToday ? jpsToday : jpsBase).add(m[1]);
                System.err.printf("markcost: round %d %s: %.2f Redis µs per job, %.0f jobs/s%n", round + 1,
                        isToday ? "today" : BASE, m[0], m[1]);
            }
        }
        double usT = Stats.median(usToday), usB = Stats.median(usBase), jT = Stats.median(jpsToday), jB = Stats.median(jpsBase);
        double usRatio = usT / usB, jpsRatio = jT / jB;
        boolean met = usRatio <= 1.05 && jpsRatio >= 0.95;
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema", "delayq-bench/v1");
        r.put("scenario", "markcost");
        r.put("params", Map.of("n", n, "rounds", rounds, "base", BASE, "from_base", FROM_BASE, "take_limit", 100,
                "payload_b", BenchApp.PAYLOAD.length()));
        r.put("ok", allTaken);
        r.put("take_ack_usec_per_job_today", BenchApp.round(usT, 3));
        r.put("take_ack_usec_per_job_base", BenchApp.round(usB, 3));
        r.put("usec_ratio_today_base", BenchApp.round(usRatio, 3));
        r.put("throughput_jps_today", Math.round(jT));
        r.put("throughput_jps_base", Math.round(jB));
        r.put("throughput_ratio_today_base", BenchApp.round(jpsRatio, 3));
        r.put("rounds_usec_today", usToday.stream().map(v -> BenchApp.round(v, 2)).toList());
        r.put("rounds_usec_base", usBase.stream().map(v -> BenchApp.round(v, 2)).toList());
        r.put("rounds_jps_today", jpsToday.stream().map(Math::round).toList());
        r.put("rounds_jps_base", jpsBase.stream().map(Math::round).toList());
        r.put("target_met", met);
        r.put("summary", String.format("take+ack Redis µs/job %.2f today vs %.2f at %s (%.3f×), throughput %d vs %d jobs/s (%.3f×),"
                + " medians of %d rounds", usT, usB, BASE, usRatio, Math.round(jT), Math.round(jB), jpsRatio, rounds));
        r.put("target", "µs/job ≤ 1.05× and throughput ≥ 0.95× the base's");
        return r;
    }

    /** One round on one store: {Redis µs per job, jobs/s, jobs taken}. */
    private double[] measure(JobQueue store) throws Exception {
        RedisCostScenario.flush();
        RedisCostScenario.enqueueBatches(today, TOPIC, n, System.currentTimeMillis() - n - 1000); // every one due
        RedisInfo before = RedisInfo.read();
        long t0 = System.nanoTime();
        int taken = RedisCostScenario.takeAll(store, TOPIC);
        long t1 = System.nanoTime();
        RedisInfo after = RedisInfo.read();
        return new double[] { (after.evalUsec() - before.evalUsec()) / (double) Math.max(1, taken),
                taken / ((t1 - t0) / 1e9), taken };
    }
}
