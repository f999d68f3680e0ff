package io.delayq.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;

/**
 * A Redis Cluster of 3 masters and 3 replicas whose first master runs inside a {@link NetNs}, so
 * that {@link NetNs#cut()} makes it stop answering (its connections hang) while it keeps running:
 * the hung master of a cloud, which the cluster fails over after {@link #NODE_TIMEOUT} (FAIL
 * after about 9 s here, its replica promoted a second later). Every node is bound to a routable
 * address and announces it (the host nodes the host end, also loopback for the test's own looks;
 * the namespace's node its end), since clients follow the addresses nodes announce. Built slot by
 * slot rather than by {@code redis-cli --cluster create}, whose placement would not say which
 * master lands in the namespace: master {@code i} serves slots {@code [i·16384/3, (i+1)·16384/3)},
 * so with {@code delayq.partitions=9} partitions 0–2 live on the namespace's master, 3–5 on the
 * second, 6–8 on the third; replica {@code i} follows master {@code i}. Nodes run with
 * {@code cluster-require-full-coverage no}, the setting docs/concepts.md asks for.
 */
public final class NetCluster implements AutoCloseable {
    /** {@code cluster-node-timeout}: a master silent this long is marked failing, then failed over. */
    public static final Duration NODE_TIMEOUT = Duration.ofMillis(8000);
    private static final int SLOTS = 16384;
    private final NetNs ns;
    private final List<Node> nodes = new ArrayList<>();
    private final Thread cleanup = new Thread(this::close, "net-cluster-stop");

    /** One node: where clients reach it, and its process. */
    public record Node(String ip, int port, Path dir, Process process, boolean inNamespace) {
        public String uri() {
            return "redis://" + ip + ":" + port;
        }
    }

    private NetCluster(NetNs ns) {
        this.ns = ns;
    }

    /** Starts the six nodes (the namespace's first), joins them, and waits until the cluster is ready. */
    public static NetCluster start(NetNs ns) {
        NetCluster c = new NetCluster(ns);
        Runtime.getRuntime().addShutdownHook(c.cleanup);
        try {
            long t0 = System.nanoTime();
            for (int i = 0; i < 6; i++) {
                c.startNode(i == 0);
            }
            c.join();
            System.out.printf("net cluster: 3 masters + 3 replicas, master 0 in %s, ready in %d ms: %s%n", ns,
                    (System.nanoTime() - t0) / 1_000_000, c.nodes.stream().map(Node::uri).toList());
            return c;
        } catch (RuntimeException | Error e) {
            c.close();
            throw e;
        }
    }

    private void startNode(boolean inNamespace) {
        int port = freePortPair();
        String ip = inNamespace ? ns.nsAddress() : ns.hostAddress();
        try {
            Path dir = Files.createTempDirectory("delayq-netcluster-" + port + "-");
            List<String> cmd = new ArrayList<>(List.of(tool(RedisProcess.serverOnPath(), "redis-server"), "--port", Integer.toString(port), "--bind"));
            cmd.addAll(inNamespace ? List.of(ip) : List.of("127.0.0.1", ip));
            cmd.addAll(List.of("--protected-mode", "no", "--cluster-enabled", "yes", "--cluster-config-file",
                    "nodes.conf", "--cluster-node-timeout", Long.toString(NODE_TIMEOUT.toMillis()),
                    // As docs/concepts.md asks of a production cluster: with Redis' default (yes) the other
                    // masters refuse every command from the hung master's FAIL until its promotion.
                    "--cluster-require-full-coverage", "no",
                    "--cluster-announce-ip", ip, "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString(),
                    "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"));
            Process p = new ProcessBuilder(inNamespace ? ns.command(cmd) : cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            Node node = new Node(ip, port, dir, p, inNamespace);
            nodes.add(node);
            await(Duration.ofSeconds(10), "node " + node.uri() + " answering", () -> "PONG".equals(cli(node, "PING").trim()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void join() {
        for (int m = 0; m < 3; m++) {
            int from = m * SLOTS / 3, to = (m + 1) * SLOTS / 3 - 1;
            cli(nodes.get(m), "CLUSTER", "ADDSLOTSRANGE", Integer.toString(from), Integer.toString(to));
        }
        Node first = nodes.get(1);
        for (Node n : nodes) {
            if (n != first) {
                cli(first, "CLUSTER", "MEET", n.ip(), Integer.toString(n.port()));
            }
        }
        await(Duration.ofSeconds(20), "every node to know the six", () -> nodes.stream()
                .allMatch(n -> cli(n, "CLUSTER", "NODES").lines().filter(l -> !l.contains("handshake")).count() == 6));
        for (int r = 3; r < 6; r++) {
            String masterId = cli(nodes.get(r - 3), "CLUSTER", "MYID").trim();
            Node replica = nodes.get(r);
            await(Duration.ofSeconds(10), "replica " + replica.uri() + " following its master",
                    () -> cli(replica, "CLUSTER", "REPLICATE", masterId).startsWith("OK"));
        }
        await(Duration.ofSeconds(30), "cluster_state:ok everywhere and every replica linked", () -> nodes.stream()
                .allMatch(n -> cli(n, "CLUSTER", "INFO").contains("cluster_state:ok")
                        && (n.port() == master(0).port() || n.port() == master(1).port() || n.port() == master(2).port()
                                || cli(n, "INFO", "replication").contains("master_link_status:up"))));
    }

    /** Master {@code i} as created (0 is the one in the namespace). */
    public Node master(int i) {
        return nodes.get(i);
    }

    /** Replica {@code i} as created: it follows master {@code i}. */
    public Node replica(int i) {
        return nodes.get(3 + i);
    }

    /** Seeds for {@code quarkus.redis.hosts}: every node at the address it announces. */
    public String hostsUri() {
        return String.join(",", nodes.stream().map(Node::uri).toList());
    }

    /** Whether a node reached from the host says it is a master now (a replica's promotion). */
    public boolean isMaster(Node n) {
        try (Resp r = new Resp(n.port())) {
            return r.str("INFO", "replication").contains("role:master");
        }
    }

    /** A command to a node over redis-cli (the namespace's node is not on loopback); its raw reply. */
    public static String cli(Node n, String... args) {
        List<String> cmd = new ArrayList<>(List.of(tool(RedisProcess.cliOnPath(), "redis-cli"), "-h", n.ip(), "-p", Integer.toString(n.port())));
        cmd.addAll(List.of(args));
        return NetNs.run(false, cmd.toArray(String[]::new));
    }

    /** The last lines of a node's log, for failure messages. */
    public String logTail(Node n, int lines) {
        try {
            List<String> all = Files.readAllLines(n.dir().resolve("redis.log"));
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** Kills every node, keeps their logs in {@code target/it-logs/netcluster-<port>.log}, deletes their directories. */
    @Override
    public synchronized void close() {
        for (Node n : nodes) {
            n.process().destroyForcibly();
        }
        Path logs = Path.of("target", "it-logs");
        for (Node n : nodes) {
            try {
                n.process().waitFor(10, TimeUnit.SECONDS);
                Files.createDirectories(logs);
                Path log = n.dir().resolve("redis.log");
                if (Files.exists(log)) {
                    Files.copy(log, logs.resolve("netcluster-" + n.port() + ".log"),
                            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                }
            } catch (IOException ignored) {
                // the logs are a help, not a result
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            try (Stream<Path> files = Files.walk(n.dir())) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (IOException ignored) {
                // a temp directory left behind is harmless
            }
        }
        nodes.clear();
        if (Thread.currentThread() != cleanup) {
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException ignored) {
                // the JVM is already shutting down
            }
        }
    }

    private static int freePortPair() {
        for (int i = 0; i < 100; i++) {
            int port = RedisProcess.freePort();
            if (port + 10_000 <= 65_535) {
                try (java.net.ServerSocket s = new java.net.ServerSocket(port + 10_000)) {
                    return port;
                } catch (IOException e) {
                    // taken: try another
                }
            }
        }
        throw new IllegalStateException("no free port pair (p, p + 10000) found");
    }

    /** The server or client DELAYQ_REDIS_SERVER / DELAYQ_REDIS_CLI names (Valkey's), else Redis' own. */
    private static String tool(String chosen, String name) {
        return chosen != null ? chosen : onPath(name);
    }

    private static String onPath(String name) {
        for (String dir : List.of("/usr/bin", "/usr/local/bin", "/bin")) {
            if (Files.isExecutable(Path.of(dir, name))) {
                return Path.of(dir, name).toString();
            }
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(java.io.File.pathSeparator)) {
                if (Files.isExecutable(Path.of(dir, name))) {
                    return Path.of(dir, name).toString();
                }
            }
        }
        throw new IllegalStateException("the cluster fault test needs " + name + " on PATH (apt-get install "
                + "redis-server redis-tools)");
    }

    private static void await(Duration timeout, String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        RuntimeException last = null;
        while (System.nanoTime() < deadline) {
            try {
                if (condition.getAsBoolean()) {
                    return;
                }
            } catch (RuntimeException e) {
                last = e;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("timed out after " + timeout + " waiting for " + what, last);
    }
}
