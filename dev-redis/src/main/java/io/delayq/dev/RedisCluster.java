package io.delayq.dev;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;


/**
 * A local Redis Cluster for the tests and the benchmark: 3 masters and 3 replicas (by default), each a
 * {@code redis-server} child process in its own temp directory, joined by
 * {@code redis-cli --cluster create}. {@link #start()} returns once every node says
 * {@code cluster_state:ok} and every replica's link to its master is up (a replica that never
 * completed its first sync refuses to fail over, so a failover test must wait for it).
 * {@link #kill9(int)} plays a crashed master, {@link #awaitFailover(int)} waits for its replica
 * to take over. Needs Debian's {@code redis-server} and {@code redis-cli} (packages
 * redis-server, redis-tools; {@code .ci/run} installs them).
 */
public final class RedisCluster implements AutoCloseable {
    /** {@code cluster-node-timeout}: a master silent this long is failed over. */
    public static final Duration NODE_TIMEOUT = Duration.ofMillis(2000);
    private static final int SLOTS = 16384;

    private final Map<Integer, RedisProcess> nodes = new LinkedHashMap<>();
    private final Map<Integer, Path> dirs = new LinkedHashMap<>();
    private final List<Integer> initialPorts = new ArrayList<>();
    private final List<Integer> killed = new ArrayList<>();
    private final Map<Integer, List<Integer>> replicasOf = new LinkedHashMap<>();
    private final Thread cleanup = new Thread(this::close, "redis-cluster-stop");
    private final Duration nodeTimeout;

    private RedisCluster(Duration nodeTimeout) {
        this.nodeTimeout = nodeTimeout;
    }

    /** Starts 3 masters with one replica each and waits until the cluster is ready. */
    public static RedisCluster start() {
        return start(3, 1);
    }

    /** Starts {@code masters} masters with {@code replicasPerMaster} replicas each; waits until ready. */
    public static RedisCluster start(int masters, int replicasPerMaster) {
        return start(masters, replicasPerMaster, NODE_TIMEOUT);
    }

    /**
     * As {@link #start(int, int)} with another {@code cluster-node-timeout}: a long one lets a test
     * freeze a master without the cluster failing it over (or, without replicas, going down).
     */
    public static RedisCluster start(int masters, int replicasPerMaster, Duration nodeTimeout) {
        RedisCluster c = new RedisCluster(nodeTimeout);
        Runtime.getRuntime().addShutdownHook(c.cleanup);
        try {
            long t0 = System.nanoTime();
            for (int i = 0; i < masters * (1 + replicasPerMaster); i++) {
                c.startNode();
            }
            c.create(replicasPerMaster);
            c.awaitReady(Duration.ofSeconds(30));
            System.out.printf("redis cluster: %d masters + %d replicas on %s ready in %d ms%n", masters,
                    masters * replicasPerMaster, c.initialPorts, (System.nanoTime() - t0) / 1_000_000);
            return c;
        } catch (RuntimeException | Error e) {
            c.close();
            throw e;
        }
    }

    private void startNode() {
        IllegalStateException last = null;
        // A free port can be taken by another process before redis-server binds it: try another.
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = busPortSafePort();
            try {
                Path dir = Files.createTempDirectory("delayq-cluster-" + port + "-");
                RedisProcess p = RedisProcess.start(redisServer(), port, List.of("--dir", dir.toString(),
                        "--logfile", dir.resolve("redis.log").toString(), "--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
                        Long.toString(nodeTimeout.toMillis()), "--save", "", "--appendonly", "no",
                        // A replica's first sync would otherwise wait 5 s for more replicas to join it.
                        "--repl-diskless-sync-delay", "0"));
                nodes.put(port, p);
                dirs.put(port, dir);
                initialPorts.add(port);
                return;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (IllegalStateException e) {
                last = e;
            }
        }
        throw last;
    }

    /** A free port whose cluster bus port (port + 10000) is free too. */
    private static int busPortSafePort() {
        for (int i = 0; i < 100; i++) {
            int port = RedisProcess.freePort();
            if (port + 10_000 <= 65_535 && isFree(port + 10_000)) {
                return port;
            }
        }
        throw new IllegalStateException("no free port pair (p, p + 10000) found");
    }

    private static boolean isFree(int port) {
        try (java.net.ServerSocket s = new java.net.ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private void create(int replicasPerMaster) {
        List<String> cmd = new ArrayList<>(List.of(redisCli(), "--cluster", "create"));
        initialPorts.forEach(p -> cmd.add("127.0.0.1:" + p));
        cmd.addAll(List.of("--cluster-replicas", Integer.toString(replicasPerMaster), "--cluster-yes"));
        try {
            Path out = dirs.get(initialPorts.get(0)).resolve("cluster-create.out");
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("redis-cli --cluster create did not finish in 30 s");
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("redis-cli --cluster create failed:\n" + Files.readString(out));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private void awaitReady(Duration timeout) {
        await(timeout, "cluster ready (cluster_state:ok on every node, every replica linked)", () -> {
            for (int port : ports()) {
                String role = info(port, "replication").get("role");
                if (!"ok".equals(clusterInfo(port).get("cluster_state"))) {
                    return false;
                }
                if ("slave".equals(role) && !"up".equals(info(port, "replication").get("master_link_status"))) {
                    return false;
                }
            }
            // Every node also agrees on who serves every slot.
            String reference = null;
            for (int port : ports()) {
                String view = slotOwners(port).toString();
                if (reference != null && !reference.equals(view)) {
                    return false;
                }
                reference = view;
            }
            return true;
        });
    }

    /** Ports of the nodes still running (masters and replicas), in start order. */
    public List<Integer> ports() {
        return initialPorts.stream().filter(p -> !killed.contains(p)).toList();
    }

    /** Ports of the current masters that serve slots, as the running nodes see it (sorted). */
    public List<Integer> masters() {
        return slotOwners(ports().get(0)).values().stream().distinct().sorted().toList();
    }

    /** Ports of the running nodes that are replicas now. */
    public List<Integer> replicas() {
        return ports().stream().filter(p -> "slave".equals(info(p, "replication").get("role"))).toList();
    }

    /** The seed list for {@code quarkus.redis.hosts}: every node, {@code redis://127.0.0.1:P,...}. */
    public String hostsUri() {
        return String.join(",", initialPorts.stream().map(p -> "redis://127.0.0.1:" + p).toList());
    }

    /** The hash slot of a key ({@code CLUSTER KEYSLOT}). */
    public int keySlot(String key) {
        try (Resp r = new Resp(ports().get(0))) {
            return (int) r.num("CLUSTER", "KEYSLOT", key);
        }
    }

    /** Port of the master serving a slot ({@code CLUSTER SLOTS}, as a running node sees it). */
    public int masterOfSlot(int slot) {
        for (Map.Entry<int[], Integer> e : slotRanges(ports().get(0)).entrySet()) {
            if (slot >= e.getKey()[0] && slot <= e.getKey()[1]) {
                return e.getValue();
            }
        }
        throw new IllegalStateException("slot " + slot + " is served by no master");
    }

    /** Port of the master serving a key. */
    public int masterOfKey(String key) {
        return masterOfSlot(keySlot(key));
    }

    /** The keys matching a glob pattern on each current master (SCAN on each; empty lists included). */
    public Map<Integer, List<String>> keysByMaster(String pattern) {
        Map<Integer, List<String>> out = new LinkedHashMap<>();
        for (int master : masters()) {
            List<String> keys = new ArrayList<>();
            try (Resp r = new Resp(master)) {
                String cursor = "0";
                do {
                    List<Object> page = r.list("SCAN", cursor, "MATCH", pattern, "COUNT", 1000);
                    cursor = page.get(0).toString();
                    ((List<?>) page.get(1)).forEach(k -> keys.add(k.toString()));
                } while (!"0".equals(cursor));
            }
            out.put(master, keys);
        }
        return out;
    }

    /**
     * Moves one slot, with its keys, to another master, the way {@code redis-cli --cluster reshard}
     * does: IMPORTING/MIGRATING, MIGRATE of every key, then SETSLOT NODE on every master; returns
     * once every running node agrees.
     */
    public void moveSlot(int slot, int toMaster) {
        int from = masterOfSlot(slot);
        if (from == toMaster) {
            throw new IllegalArgumentException("slot " + slot + " is already on " + toMaster);
        }
        try (Resp src = new Resp(from); Resp dst = new Resp(toMaster)) {
            String srcId = src.str("CLUSTER", "MYID");
            String dstId = dst.str("CLUSTER", "MYID");
            dst.call("CLUSTER", "SETSLOT", slot, "IMPORTING", srcId);
            src.call("CLUSTER", "SETSLOT", slot, "MIGRATING", dstId);
            List<Object> keys;
            while (!(keys = src.list("CLUSTER", "GETKEYSINSLOT", slot, 100)).isEmpty()) {
                List<Object> migrate = new ArrayList<>(List.of("MIGRATE", "127.0.0.1", toMaster, "", 0, 5000, "KEYS"));
                migrate.addAll(keys);
                src.call(migrate.toArray());
            }
            dst.call("CLUSTER", "SETSLOT", slot, "NODE", dstId);
            src.call("CLUSTER", "SETSLOT", slot, "NODE", dstId);
            for (int m : masters()) {
                if (m != from && m != toMaster) {
                    try (Resp other = new Resp(m)) {
                        other.call("CLUSTER", "SETSLOT", slot, "NODE", dstId);
                    }
                }
            }
        }
        await(Duration.ofSeconds(10), "every node to see slot " + slot + " on " + toMaster, () -> {
            for (int port : ports()) {
                for (Map.Entry<int[], Integer> e : slotRanges(port).entrySet()) {
                    if (slot >= e.getKey()[0] && slot <= e.getKey()[1] && e.getValue() != toMaster) {
                        return false;
                    }
                }
            }
            return true;
        });
    }

    /** A connection to one node; the caller closes it. */
    public Resp node(int port) {
        return new Resp(port);
    }

    /** The process id of a node's redis-server (to freeze it with SIGSTOP, as a hung host). */
    public long pid(int port) {
        RedisProcess p = nodes.get(port);
        if (p == null || killed.contains(port)) {
            throw new IllegalArgumentException("no running node on port " + port);
        }
        return p.pid();
    }

    /** SIGKILL of one node: a crash, no goodbye to the cluster. */
    public void kill9(int port) {
        RedisProcess p = nodes.get(port);
        if (p == null || killed.contains(port)) {
            throw new IllegalArgumentException("no running node on port " + port);
        }
        // Its replicas, while it can still say: awaitFailover waits for one of them.
        List<Integer> replicas = new ArrayList<>();
        info(port, "replication").forEach((k, v) -> {
            if (k.matches("slave\\d+")) {
                replicas.add(Integer.parseInt(v.replaceAll(".*port=(\\d+).*", "$1")));
            }
        });
        replicasOf.put(port, replicas);
        ProcessHandle.of(p.pid()).ifPresent(h -> {
            h.destroyForcibly();
            h.onExit().orTimeout(10, TimeUnit.SECONDS).join();
        });
        killed.add(port);
    }

    /**
     * Waits until a replica of a killed master serves its slots and every running node says
     * {@code cluster_state:ok}; returns the port of the promoted replica.
     */
    public int awaitFailover(int killedMaster, Duration timeout) {
        List<Integer> heirs = replicasOf.getOrDefault(killedMaster, List.of());
        if (heirs.isEmpty()) {
            throw new IllegalArgumentException(killedMaster + " was not a master with replicas when it was killed");
        }
        int[] promoted = { -1 };
        await(timeout, "failover of the master on " + killedMaster + " to one of " + heirs, () -> {
            for (int port : ports()) {
                if (!"ok".equals(clusterInfo(port).get("cluster_state"))
                        || slotOwners(port).values().stream().anyMatch(killed::contains)) {
                    return false;
                }
            }
            for (int heir : heirs) {
                if (masters().contains(heir)) {
                    promoted[0] = heir;
                    return true;
                }
            }
            return false;
        });
        return promoted[0];
    }

    /** CPU seconds (user + sys) the node's process used so far ({@code INFO cpu}). */
    public double infoCpu(int port) {
        Map<String, String> cpu = info(port, "cpu");
        return Double.parseDouble(cpu.get("used_cpu_user")) + Double.parseDouble(cpu.get("used_cpu_sys"));
    }

    /** Commands the node ran so far, those inside scripts included ({@code total_commands_processed}). */
    public long commandsProcessed(int port) {
        return Long.parseLong(info(port, "stats").get("total_commands_processed"));
    }

    /** Calls per command name so far ({@code INFO commandstats}: {@code get}, {@code evalsha}, {@code cluster|slots}...). */
    public Map<String, Long> commandCalls(int port) {
        Map<String, Long> calls = new java.util.TreeMap<>();
        info(port, "commandstats").forEach((k, v) -> calls.put(k.replace("cmdstat_", ""),
                Long.parseLong(v.replaceAll("^calls=(\\d+).*", "$1"))));
        return calls;
    }

    /**
     * Kills every pub/sub connection on every running node ({@code CLIENT KILL TYPE pubsub}): the
     * wake-up messages sent until a subscriber reconnects are lost. Returns how many were killed.
     */
    public long killPubSubClients() {
        long n = 0;
        for (int port : ports()) {
            try (Resp r = new Resp(port)) {
                n += r.num("CLIENT", "KILL", "TYPE", "pubsub");
            }
        }
        return n;
    }

    /** The last lines of a node's log, for failure messages. */
    public String logTail(int port, int lines) {
        try {
            List<String> all = Files.readAllLines(dirs.get(port).resolve("redis.log"));
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** {@code INFO <section>} of a node as a map. */
    public Map<String, String> info(int port, String section) {
        try (Resp r = new Resp(port)) {
            return fields(r.str("INFO", section));
        }
    }

    /** {@code CLUSTER INFO} of a node as a map. */
    public Map<String, String> clusterInfo(int port) {
        try (Resp r = new Resp(port)) {
            return fields(r.str("CLUSTER", "INFO"));
        }
    }

    private static Map<String, String> fields(String text) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String line : text.split("\r?\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && !line.startsWith("#")) {
                m.put(line.substring(0, colon), line.substring(colon + 1).trim());
            }
        }
        return m;
    }

    /** Slot range (first, last) → port of its master, from one node's {@code CLUSTER SLOTS}. */
    private Map<int[], Integer> slotRanges(int port) {
        Map<int[], Integer> out = new LinkedHashMap<>();
        try (Resp r = new Resp(port)) {
            for (Object o : r.list("CLUSTER", "SLOTS")) {
                List<?> range = (List<?>) o;
                List<?> master = (List<?>) range.get(2);
                out.put(new int[] { ((Long) range.get(0)).intValue(), ((Long) range.get(1)).intValue() },
                        ((Long) master.get(1)).intValue());
            }
        }
        return out;
    }

    /** Range start → master port, sorted: comparable across nodes; empty ranges mean uncovered slots. */
    private Map<Integer, Integer> slotOwners(int port) {
        Map<Integer, Integer> owners = new java.util.TreeMap<>();
        int covered = 0;
        for (Map.Entry<int[], Integer> e : slotRanges(port).entrySet()) {
            owners.put(e.getKey()[0], e.getValue());
            covered += e.getKey()[1] - e.getKey()[0] + 1;
        }
        if (covered != SLOTS) {
            owners.put(-1, -1); // not every slot is served: never equal to a complete view
        }
        return owners;
    }

    private static void await(Duration timeout, String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        RuntimeException lastError = null;
        while (System.nanoTime() < deadline) {
            try {
                if (condition.getAsBoolean()) {
                    return;
                }
                lastError = null;
            } catch (RuntimeException e) {
                lastError = e; // a node not answering yet, or a view mid-change
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("timed out after " + timeout + " waiting for " + what, lastError);
    }

    private static String redisServer() {
        String server = RedisProcess.serverOnPath();
        if (server == null) {
            throw new IllegalStateException("the cluster tests need redis-server (or valkey-server) on PATH (apt-get install"
                    + " redis-server)");
        }
        return server;
    }

    private static String redisCli() {
        String cli = RedisProcess.cliOnPath();
        if (cli == null) {
            throw new IllegalStateException("the cluster tests need redis-cli (or valkey-cli) on PATH (apt-get install"
                    + " redis-tools)");
        }
        return cli;
    }

    /**
     * Kills every node (nothing in them is worth a clean shutdown), copies their logs to
     * {@code target/it-logs/cluster-<port>.log} and deletes their directories.
     */
    @Override
    public synchronized void close() {
        nodes.values().forEach(p -> ProcessHandle.of(p.pid()).ifPresent(ProcessHandle::destroyForcibly));
        for (RedisProcess p : nodes.values()) {
            p.stop(); // reaps the process
        }
        nodes.clear();
        Path logs = Path.of("target", "it-logs");
        for (Map.Entry<Integer, Path> e : dirs.entrySet()) {
            try {
                Files.createDirectories(logs);
                Path log = e.getValue().resolve("redis.log");
                if (Files.exists(log)) {
                    Files.copy(log, logs.resolve("cluster-" + e.getKey() + ".log"),
                            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                }
            } catch (IOException ignored) {
                // the logs are a help, not a result
            }
            try (Stream<Path> files = Files.walk(e.getValue())) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (IOException ignored) {
                // a temp directory left behind is harmless
            }
        }
        dirs.clear();
        if (Thread.currentThread() != cleanup) {
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException ignored) {
                // the JVM is already shutting down
            }
        }
    }
}
