package io.delayq.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.bench.ChaosChecker.Delivery;
import io.delayq.bench.ChaosChecker.Duplicate;
import io.delayq.bench.ChaosChecker.Job;
import io.delayq.bench.Nemesis.Fault;
import io.delayq.dev.RedisProcess;

/**
 * The nemesis soak ({@code bench/run.sh chaos [--minutes N] [--seed S] [--rate R]}): 3 replica
 * processes, each in a network namespace of its own, one redis-server with an AOF, an HTTP
 * target that works 0–2 s per call ({@link ChaosReceiver}), R jobs/s (100) enqueued through the
 * replicas' REST API ({@link ChaosLoad}) for N minutes (5) while the {@link Nemesis} kills,
 * freezes and cuts off replicas and kills and pauses Redis; lease 6 s, heartbeat 2 s, so that
 * faults beyond the lease happen within minutes. Then every fault is healed, the fleet drains,
 * and {@link ChaosChecker} judges every delivery. One JSON line and a short table; exit 1 when a
 * job is lost or a duplicate is unexplained. Everything it wrote is in {@code bench/results/chaos/}
 * (fault log, deliveries, replica logs, the verdict's details).
 *
 * <p>Redis runs with {@code appendfsync always}: a reply then follows the write of its AOF entry,
 * so no job answered 201 can be missing after a SIGKILL and restart. With {@code everysec} a
 * write that Redis postpones behind a slow background fsync can be acknowledged and still not be
 * in the file when the process dies, and the checker would put down Redis' own trade-off as a lost
 * job. The AOF lives on {@code /dev/shm} where there is one: a process kill keeps the page cache,
 * so tmpfs loses nothing the nemesis can cause, and fsync costs nothing on a shared 2-core machine.
 */
final class ChaosScenario {
    private static final long LEASE_MS = 6000;
    private static final long HEARTBEAT_MS = 2000;
    private static final int REPLICAS = 3;
    /** The first faults wait until the replicas have served a little: a cold JVM's first seconds are not the test. */
    private static final long QUIET_START_MS = 20_000;
    private static final long DRAIN_LIMIT_MS = 180_000;
    private static final ObjectMapper JSON = new ObjectMapper();

    private ChaosScenario() {
    }

    static int run(List<String> args) throws Exception {
        for (int i = 0; i < args.size(); i += 2) {
            if (!List.of("--minutes", "--seed", "--rate").contains(args.get(i)) || i + 1 >= args.size()) {
                throw new IllegalArgumentException("chaos takes --minutes N, --seed S and --rate R (jobs/s), not " + args);
            }
        }
        try {
            ChaosNet.requireRootAndIp();
        } catch (IllegalStateException e) {
            System.err.println("delayq bench: " + e.getMessage());
            return 2;
        }
        int minutes = option(args, "--minutes", 5);
        long seed = option(args, "--seed", (int) (System.nanoTime() & 0x7fffffff));
        int rate = option(args, "--rate", 100);
        Path dir = Path.of("bench", "results", "chaos");
        if (Files.isDirectory(dir)) {
            try (Stream<Path> old = Files.list(dir)) {
                for (Path p : old.toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
        Files.createDirectories(dir);
        System.err.printf("delayq bench: chaos, %d min, seed %d, %d jobs/s, %d replicas, lease %d ms, heartbeat %d ms, %d cores;"
                + " files in %s%n", minutes, seed, rate, REPLICAS, LEASE_MS, HEARTBEAT_MS,
                Runtime.getRuntime().availableProcessors(), dir);

        ChaosNet net = ChaosNet.create(REPLICAS, seed);
        Path aof = Files.createTempDirectory(Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : Path.of(
                System.getProperty("java.io.tmpdir")), "dqc-redis-");
        List<ChaosReplica> replicas = new ArrayList<>();
        RedisProcess redis = null;
        ChaosReceiver receiver = null;
        try {
            List<String> hostEnds = new ArrayList<>();
            for (int i = 0; i < REPLICAS; i++) {
                hostEnds.add(net.hostAddress(i));
            }
            List<String> redisArgs = new ArrayList<>(List.of("--bind", "127.0.0.1"));
            redisArgs.addAll(hostEnds);
            redisArgs.addAll(List.of("--dir", aof.toString(), "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                    "--logfile", dir.resolve("redis.log").toAbsolutePath().toString()));
            redis = RedisProcess.start(RedisProcess.freePort(), redisArgs);
            int receiverPort = RedisProcess.freePort();
            receiver = ChaosReceiver.start(dir, receiverPort, seed, hostEnds);
            for (int i = 0; i < REPLICAS; i++) {
                Map<String, String> s = new LinkedHashMap<>();
                s.put("quarkus.redis.hosts", "redis://" + net.hostAddress(i) + ":" + redis.port());
                s.put("quarkus.redis.client-type", "standalone");
                s.put("delayq.partitions", "1");
                s.put("delayq.dispatch.lease", LEASE_MS + "ms");
                s.put("delayq.dispatch.heartbeat", HEARTBEAT_MS + "ms");
                s.put("delayq.topics." + ChaosLoad.TOPIC + ".http.url", "http://" + net.hostAddress(i) + ":" + receiverPort + "/deliver");
                // 0–2 s per call at up to 2 × the rate with a replica away: room for every call at once.
                s.put("delayq.topics." + ChaosLoad.TOPIC + ".http.max-connections", "256");
                s.put("delayq.topics." + ChaosLoad.TOPIC + ".concurrency", "256");
                // A client retry of a job that already ran must not enqueue it anew.
                s.put("delayq.topics." + ChaosLoad.TOPIC + ".dedup-window", "1h");
                replicas.add(new ChaosReplica(i, net, dir, s));
            }
            for (ChaosReplica r : replicas) {
                r.start();
            }
            for (ChaosReplica r : replicas) {
                if (!r.awaitReady(Duration.ofSeconds(120))) {
                    throw new IllegalStateException("replica " + r.index + " did not start: see " + dir.resolve("replica-" + r.index + ".log"));
                }
            }
            System.err.println("  3 replicas ready; load and nemesis start");

            String loadBefore = loadAverage();
            long loadStart = System.currentTimeMillis();
            long loadEnd = loadStart + minutes * 60_000L;
            ChaosLoad load = new ChaosLoad(replicas, rate, seed);
            Throwable[] loadFailure = { null };
            Thread producer = Thread.ofPlatform().name("chaos-load").start(() -> {
                try {
                    load.run(loadEnd);
                } catch (Throwable e) {
                    loadFailure[0] = e;
                }
            });
            Nemesis nemesis = new Nemesis(replicas, net, redis, LEASE_MS, seed, dir);
            Thread.sleep(QUIET_START_MS);
            long nemesisStart = System.currentTimeMillis();
            nemesis.run(loadEnd);
            producer.join();
            if (loadFailure[0] != null) {
                throw new IllegalStateException("the producer failed", loadFailure[0]);
            }
            List<Fault> faults = nemesis.faults();
            long quietSince = Math.max(System.currentTimeMillis(),
                    faults.stream().mapToLong(Fault::end).max().orElse(0));
            List<Job> jobs = new ArrayList<>();
            load.sent.forEach((id, s) -> jobs.add(new Job(id, s.runAt(), s.accepted() > 0)));
            jobs.sort(Comparator.comparingLong(Job::runAt));
            List<Delivery> deliveries = drain(receiver, net, jobs, quietSince);

            Map<String, Object> redisState = redisState(replicas);
            ChaosChecker.Verdict v = new ChaosChecker(LEASE_MS).check(jobs, deliveries, faults, nemesisStart);
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("schema", "delayq-bench/v1");
            r.put("scenario", "chaos");
            r.put("params", Map.of("minutes", minutes, "seed", seed, "rate_jps", rate, "replicas", REPLICAS, "lease_ms",
                    LEASE_MS, "heartbeat_ms", HEARTBEAT_MS, "redis_aof", "appendfsync always", "work_ms", "0-2000",
                    "enqueue", "POST /jobs, client ids, retried on the next replica"));
            r.put("ok", v.ok());
            r.putAll(v.figures());
            details(dir, v, faults, redisState);
            r.putAll(redisState);
            r.put("enqueue_requests", load.requests());
            // A shared machine: how busy it was says how far the lateness figures are delayq's own.
            r.put("host_loadavg_1m_before_after", loadBefore + " " + loadAverage());
            r.put("not_accepted_by_last_status", load.notAcceptedByStatus());
            load.write(dir.resolve("sent.txt"));
            emit(r);
            ChaosChecker.table(r);
            return v.ok() ? 0 : 1;
        } finally {
            replicas.forEach(ChaosReplica::stop);
            if (receiver != null) {
                receiver.stop();
            }
            if (redis != null) {
                redis.stop();
            }
            net.close();
            deleteTree(aof);
        }
    }

    /**
     * Waits until every accepted job was delivered and a lease and more has passed since the last
     * fault healed (a rerun of a job whose ack was lost comes that late), or the limit.
     */
    private static List<Delivery> drain(ChaosReceiver receiver, ChaosNet net, List<Job> jobs, long quietSince)
            throws IOException, InterruptedException {
        Set<String> accepted = new HashSet<>();
        jobs.stream().filter(Job::accepted).forEach(j -> accepted.add(j.id()));
        long limit = System.currentTimeMillis() + DRAIN_LIMIT_MS;
        long lastReport = 0;
        while (true) {
            List<Delivery> ds = deliveries(receiver, net);
            Set<String> missing = new HashSet<>(accepted);
            ds.forEach(d -> missing.remove(d.id()));
            long now = System.currentTimeMillis();
            if (missing.isEmpty() && now >= quietSince + LEASE_MS + 4000) {
                return ds;
            }
            if (now > limit) {
                System.err.printf("  drain: %d accepted jobs still undelivered after %d s%n", missing.size(), DRAIN_LIMIT_MS / 1000);
                return ds;
            }
            if (now - lastReport > 10_000) {
                System.err.printf("  drain: %d accepted jobs not delivered yet%n", missing.size());
                lastReport = now;
            }
            Thread.sleep(1000);
        }
    }

    private static List<Delivery> deliveries(ChaosReceiver receiver, ChaosNet net) throws IOException {
        List<Delivery> out = new ArrayList<>();
        for (String[] f : receiver.records()) {
            out.add(new Delivery(f[0], Integer.parseInt(f[1]), net.replicaOf(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4]),
                    f[5].equals("1")));
        }
        return out;
    }

    /** Jobs of the topic still in Redis and the dead ones, from the first replica that answers. */
    private static Map<String, Object> redisState(List<ChaosReplica> replicas) {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        Map<String, Object> out = new LinkedHashMap<>();
        for (ChaosReplica r : replicas) {
            try {
                JsonNode topics = JSON.readTree(http.send(HttpRequest.newBuilder(URI.create(r.base() + "/topics"))
                        .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body());
                for (JsonNode t : topics) {
                    if (t.path("topic").asText().equals(ChaosLoad.TOPIC)) {
                        out.put("dead", t.path("dead").asLong());
                        out.put("left_in_redis", t.path("scheduled").asLong() + t.path("inflight").asLong());
                    }
                }
                JsonNode dead = JSON.readTree(http.send(HttpRequest.newBuilder(URI.create(r.base() + "/topics/"
                        + ChaosLoad.TOPIC + "/dead?limit=1000")).timeout(Duration.ofSeconds(5)).build(),
                        HttpResponse.BodyHandlers.ofString()).body());
                List<String> ids = new ArrayList<>();
                for (JsonNode d : dead) {
                    ids.add(d.path("id").asText() + " attempts " + d.path("attempts").asInt() + ": " + d.path("lastError").asText());
                }
                out.putIfAbsent("dead", 0L);
                out.putIfAbsent("left_in_redis", 0L);
                out.put("dead_jobs", ids);
                return out;
            } catch (IOException | RuntimeException e) {
                // this replica does not answer: ask the next
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        out.put("dead", -1L);
        out.put("left_in_redis", -1L);
        return out;
    }

    /** The lost ids and every duplicate, with its two deliveries and the faults near them, to verdict.txt (the first ones also to stderr). */
    @SuppressWarnings("unchecked")
    private static void details(Path dir, ChaosChecker.Verdict v, List<Fault> faults, Map<String, Object> redisState)
            throws IOException {
        List<String> lines = new ArrayList<>();
        lines.add("faults:");
        faults.forEach(f -> lines.add("  " + f));
        lines.add("lost (" + v.lostIds().size() + "): " + v.lostIds());
        lines.add("dead in Redis: " + redisState.getOrDefault("dead_jobs", List.of()));
        lines.add("duplicates (" + v.duplicates().size() + "):");
        for (Duplicate d : v.duplicates()) {
            lines.add("  " + d.explanation() + "  " + d.before() + "  ->  " + d.delivery());
        }
        Files.write(dir.resolve("verdict.txt"), lines);
        redisState.remove("dead_jobs");
        if (!v.lostIds().isEmpty()) {
            System.err.println("  lost: " + v.lostIds().subList(0, Math.min(20, v.lostIds().size())));
        }
        v.duplicates().stream().filter(d -> !d.explained()).limit(20)
                .forEach(d -> System.err.println("  " + d.explanation() + ": " + d.before() + " -> " + d.delivery()));
    }

    private static void emit(Map<String, Object> r) {
        System.out.println(Report.json(r));
        try {
            Path file = Files.createDirectories(Path.of("bench", "results")).resolve("last-run.jsonl");
            Files.writeString(file, Report.json(r) + "\n", StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    System.getenv("BENCH_APPEND") == null ? StandardOpenOption.TRUNCATE_EXISTING : StandardOpenOption.APPEND);
        } catch (IOException e) {
            System.err.println("could not write bench/results: " + e);
        }
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException e) {
            return "?";
        }
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> all = Files.walk(root)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            System.err.println("could not remove " + root + ": " + e);
        }
    }

    private static int option(List<String> args, String name, int dflt) {
        int at = args.indexOf(name);
        return at >= 0 && at + 1 < args.size() ? Integer.parseInt(args.get(at + 1)) : dflt;
    }
}
