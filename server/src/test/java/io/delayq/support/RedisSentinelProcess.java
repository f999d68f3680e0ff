package io.delayq.support;

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
import java.util.StringJoiner;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.awaitility.Awaitility;

import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;

/**
 * A Redis Sentinel deployment of real Debian {@code redis-server} processes on loopback ports: one
 * master, its replicas and the sentinels that watch them, each in a temp directory of its own, with
 * short failure detection ({@code down-after-milliseconds} 1000) so that a failover test finishes
 * in seconds. {@link #kill9Master()} kills the master with SIGKILL, {@link #awaitFailover} waits
 * until the sentinels report a promoted replica; {@link #close()} kills every process and deletes
 * the directories. Output of each process goes to {@code target/it-logs/sentinel-*.log}.
 */
public final class RedisSentinelProcess implements AutoCloseable {
    public static final long DOWN_AFTER_MS = 1000;
    public static final long FAILOVER_TIMEOUT_MS = 5000;

    private final String masterName;
    private final Path root;
    /** Data nodes (master and replicas) by port; the sentinels by port. */
    private final Map<Integer, Process> nodes = new LinkedHashMap<>();
    private final Map<Integer, Process> sentinels = new LinkedHashMap<>();
    private final Thread cleanup = new Thread(this::killAll, "redis-sentinel-cleanup");
    private int killedPort = -1;

    private RedisSentinelProcess(String masterName, Path root) {
        this.masterName = masterName;
        this.root = root;
    }

    /**
     * Starts a master, {@code replicas} replicas of it and {@code sentinelCount} sentinels with a
     * quorum of a majority of them; returns once every replica is in sync and every sentinel knows
     * the replicas and the other sentinels (so a failover can be agreed on at once).
     */
    public static RedisSentinelProcess start(String masterName, int replicas, int sentinelCount) {
        Path root;
        try {
            root = Files.createTempDirectory("dq-sentinel-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        RedisSentinelProcess s = new RedisSentinelProcess(masterName, root);
        Runtime.getRuntime().addShutdownHook(s.cleanup);
        try {
            s.startAll(replicas, sentinelCount);
            return s;
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private void startAll(int replicas, int sentinelCount) {
        int master = RedisProcess.freePort();
        nodes.put(master, server("master", master, List.of()));
        for (int i = 0; i < replicas; i++) {
            int port = RedisProcess.freePort();
            nodes.put(port, server("replica", port, List.of("--replicaof", "127.0.0.1", Integer.toString(master))));
        }
        await("master and replicas answer", Duration.ofSeconds(10),
                () -> nodes.keySet().stream().allMatch(p -> RedisProcess.ping("redis://127.0.0.1:" + p)));
        await(replicas + " replica(s) in sync", Duration.ofSeconds(20), () -> nodes.keySet().stream().skip(1)
                .allMatch(p -> info(p, "replication").contains("master_link_status:up")));
        int quorum = sentinelCount / 2 + 1;
        for (int i = 0; i < sentinelCount; i++) {
            int port = RedisProcess.freePort();
            sentinels.put(port, sentinel(port, master, quorum));
        }
        // Sentinels find the replicas through the master's INFO, and each other through hello
        // messages on the master (every 2 s): a failover needs both.
        await("sentinels know the replicas and each other", Duration.ofSeconds(20), () -> sentinels.keySet().stream()
                .allMatch(p -> sentinelCount(p, "REPLICAS") == replicas && sentinelCount(p, "SENTINELS") == sentinelCount - 1));
    }

    private Process server(String role, int port, List<String> extra) {
        Path dir = dir(role + "-" + port);
        List<String> cmd = new ArrayList<>(List.of(RedisProcess.executable(), "--port", Integer.toString(port), "--bind",
                "127.0.0.1", "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", dir.toString()));
        cmd.addAll(extra);
        return launch(cmd, role + "-" + port);
    }

    private Process sentinel(int port, int master, int quorum) {
        Path dir = dir("sentinel-" + port);
        Path conf = dir.resolve("sentinel.conf");
        String text = String.join("\n", "port " + port, "bind 127.0.0.1", "protected-mode no", "dir " + dir,
                "sentinel monitor " + masterName + " 127.0.0.1 " + master + " " + quorum,
                "sentinel down-after-milliseconds " + masterName + " " + DOWN_AFTER_MS,
                "sentinel failover-timeout " + masterName + " " + FAILOVER_TIMEOUT_MS,
                "sentinel parallel-syncs " + masterName + " 1", "");
        try {
            Files.writeString(conf, text); // the sentinel rewrites it with what it learns
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return launch(List.of(RedisProcess.executable(), conf.toString(), "--sentinel"), "sentinel-" + port);
    }

    private Path dir(String name) {
        try {
            return Files.createDirectories(root.resolve(name));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Process launch(List<String> cmd, String name) {
        try {
            Path logs = Files.createDirectories(Path.of("target", "it-logs"));
            return new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(logs.resolve("sentinel-" + name + ".log").toFile()).start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The master name the sentinels monitor ({@code quarkus.redis.master-name}). */
    public String masterName() {
        return masterName;
    }

    /** The sentinels as {@code quarkus.redis.hosts} takes them: {@code redis://127.0.0.1:p1,...}. */
    public String sentinelHosts() {
        StringJoiner j = new StringJoiner(",");
        sentinels.keySet().forEach(p -> j.add("redis://127.0.0.1:" + p));
        return j.toString();
    }

    /** The master's port as the first sentinel that answers reports it; -1 when none answers. */
    public int masterPort() {
        for (int p : sentinels.keySet()) {
            try (Resp r = new Resp(p)) {
                List<Object> addr = r.list("SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName);
                if (addr != null) {
                    return Integer.parseInt(addr.get(1).toString());
                }
            } catch (RuntimeException e) {
                // try the next sentinel
            }
        }
        return -1;
    }

    /** Ports of the data nodes still running (the master and its replicas). */
    public List<Integer> liveNodePorts() {
        return nodes.entrySet().stream().filter(e -> e.getValue().isAlive()).map(Map.Entry::getKey).toList();
    }

    /** SIGKILLs the current master (as a node failure would); returns its port. */
    public int kill9Master() {
        int port = masterPort();
        Process p = nodes.get(port);
        if (p == null) {
            throw new IllegalStateException("the sentinels report master port " + port + ", which is none of " + nodes.keySet());
        }
        p.destroyForcibly(); // SIGKILL on Linux
        try {
            p.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        killedPort = port;
        return port;
    }

    /**
     * Waits until a sentinel reports a master other than the killed one and that node answers
     * {@code ROLE} as master; returns its port.
     */
    public int awaitFailover(Duration timeout) {
        if (killedPort < 0) {
            throw new IllegalStateException("no master was killed");
        }
        int[] promoted = { -1 };
        await("a replica promoted after killing " + killedPort, timeout, () -> {
            int p = masterPort();
            if (p > 0 && p != killedPort && "master".equals(role(p))) {
                promoted[0] = p;
                return true;
            }
            return false;
        });
        return promoted[0];
    }

    /** {@code ROLE}'s first element ("master", "slave", "sentinel"), or null when the node does not answer. */
    public static String role(int port) {
        try (Resp r = new Resp(port)) {
            return r.list("ROLE").get(0).toString();
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** {@code INFO section} of a node, empty when it does not answer. */
    public static String info(int port, String section) {
        try (Resp r = new Resp(port)) {
            return r.str("INFO", section);
        } catch (RuntimeException e) {
            return "";
        }
    }

    private int sentinelCount(int sentinelPort, String what) {
        try (Resp r = new Resp(sentinelPort)) {
            return r.list("SENTINEL", what, masterName).size();
        } catch (RuntimeException e) {
            return -1;
        }
    }

    private static void await(String what, Duration timeout, Callable<Boolean> condition) {
        Awaitility.await("Redis Sentinel: " + what).atMost(timeout).pollInterval(Duration.ofMillis(50)).until(condition);
    }

    private void killAll() {
        Stream.concat(sentinels.values().stream(), nodes.values().stream()).forEach(Process::destroyForcibly);
        Stream.concat(sentinels.values().stream(), nodes.values().stream()).forEach(p -> {
            try {
                p.waitFor(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    @Override
    public void close() {
        killAll();
        try {
            Runtime.getRuntime().removeShutdownHook(cleanup);
        } catch (IllegalStateException e) {
            // already shutting down: the hook is running
        }
        try (Stream<Path> files = Files.walk(root)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // a temp directory left behind is harmless
        }
    }
}
