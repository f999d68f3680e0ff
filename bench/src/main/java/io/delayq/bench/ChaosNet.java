package io.delayq.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The chaos scenario's network: one network namespace per replica, each joined to the host by a
 * veth pair with a /30 of its own ({@code 10.231.X.4i+1} on the host end, {@code .4i+2} inside).
 * Cutting a replica off is {@code ip link set <host end> down}: its sockets hang, as across a
 * lost node, and {@code up} heals them; an {@code unreachable} route for the whole /24 keeps the
 * host's traffic for a cut replica from leaving by the default route. Names carry this JVM's pid ({@code dqc<pid>-<i>},
 * {@code dqc<pid>h<i>}, {@code dqc<pid>n<i>}, at most 12 characters: interface names stop at 15),
 * so that runs side by side never touch each other's, and a leftover of a run that was killed
 * can be told from a live one by its pid. Removed by {@link #close()}, which a shutdown hook
 * also runs.
 */
final class ChaosNet implements AutoCloseable {
    private static final String PREFIX = "dqc";
    private final String tag = PREFIX + ProcessHandle.current().pid();

    private final int octet;
    private final int replicas;
    private final List<String> made = new ArrayList<>();
    private volatile boolean closed;

    private ChaosNet(int octet, int replicas) {
        this.octet = octet;
        this.replicas = replicas;
    }

    /**
     * Checks that this process may create namespaces (root, {@code ip} on PATH) and creates them,
     * on a third octet no interface of this host uses yet.
     */
    static ChaosNet create(int replicas, long seed) {
        requireRootAndIp();
        removeLeftovers();
        ChaosNet net = new ChaosNet(freeOctet(new Random(seed ^ ProcessHandle.current().pid())), replicas);
        Runtime.getRuntime().addShutdownHook(new Thread(net::close, "chaos-net-cleanup"));
        try {
            for (int i = 0; i < replicas; i++) {
                net.add(i);
            }
            // With a host end down its connected route goes, and traffic to that namespace's
            // address would follow the default route off the host (seen here: the gateway answered
            // HTTP 404 for a cut replica). This route, below the connected ones, keeps it on the host:
            // the producer's calls to a cut replica fail at once, nothing leaves.
            must(List.of("ip", "route", "add", "unreachable", net.subnet(), "metric", "4000"));
            net.made.add("route:" + net.subnet());
        } catch (RuntimeException e) {
            net.close();
            throw e;
        }
        return net;
    }

    /** Fails with a message that says what is missing, before anything is made. */
    static void requireRootAndIp() {
        String why = null;
        if (!"0".equals(output(List.of("id", "-u")).trim())) {
            why = "it must run as root";
        } else if (!ok(List.of("ip", "netns", "list"))) {
            why = "`ip` (iproute2) with network namespace support is missing";
        }
        if (why != null) {
            throw new IllegalStateException("the chaos scenario cuts replicas off in network namespaces of their own: "
                    + why + " (Debian: apt-get install -y iproute2; run as root, as CI does)");
        }
    }

    /** Namespaces and links of earlier runs of this scenario whose JVM is gone (killed before its hook ran). */
    private static void removeLeftovers() {
        for (String line : output(List.of("ip", "netns", "list")).split("\n")) {
            String name = line.split(" ")[0];
            if (name.matches(PREFIX + "\\d+-\\d+") && !alive(Long.parseLong(name.substring(3, name.indexOf('-'))))) {
                run(List.of("ip", "netns", "del", name));
            }
        }
        for (String line : output(List.of("ip", "-o", "link", "show")).split("\n")) {
            String[] f = line.split(":\\s+");
            if (f.length > 1) {
                String name = f[1].split("@")[0];
                if (name.matches(PREFIX + "\\d+h\\d+") && !alive(Long.parseLong(name.substring(3, name.indexOf('h'))))) {
                    run(List.of("ip", "link", "del", name));
                }
            }
        }
    }

    private static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    private static int freeOctet(Random random) {
        String used = output(List.of("ip", "-4", "-o", "addr", "show")) + output(List.of("ip", "-4", "route", "show"));
        for (int tries = 0; tries < 200; tries++) {
            int x = 100 + random.nextInt(150);
            if (!used.contains("10.231." + x + ".")) {
                return x;
            }
        }
        throw new IllegalStateException("no free 10.231.X.0/24 for the chaos namespaces");
    }

    private void add(int i) {
        String ns = namespace(i);
        String host = hostLink(i);
        String inner = tag + "n" + i;
        must(List.of("ip", "netns", "add", ns));
        made.add("ns:" + ns);
        must(List.of("ip", "link", "add", host, "type", "veth", "peer", "name", inner));
        made.add("link:" + host);
        must(List.of("ip", "link", "set", inner, "netns", ns));
        must(List.of("ip", "addr", "add", hostAddress(i) + "/30", "dev", host));
        must(List.of("ip", "link", "set", host, "up"));
        must(List.of("ip", "netns", "exec", ns, "ip", "addr", "add", replicaAddress(i) + "/30", "dev", inner));
        must(List.of("ip", "netns", "exec", ns, "ip", "link", "set", inner, "up"));
        must(List.of("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"));
    }

    private String hostLink(int i) {
        return tag + "h" + i;
    }

    private String subnet() {
        return "10.231." + octet + ".0/24";
    }

    String namespace(int i) {
        return tag + "-" + i;
    }

    /** The host end of replica i's pair: Redis and the receiver listen there for it. */
    String hostAddress(int i) {
        return "10.231." + octet + "." + (4 * i + 1);
    }

    /** Replica i's own address, inside its namespace. */
    String replicaAddress(int i) {
        return "10.231." + octet + "." + (4 * i + 2);
    }

    /** Replica index of an address inside a namespace, -1 for any other. */
    int replicaOf(String address) {
        for (int i = 0; i < replicas; i++) {
            if (replicaAddress(i).equals(address)) {
                return i;
            }
        }
        return -1;
    }

    /** Link down: replica i's sockets hang (nothing is reset), its own end still answers inside. */
    void cut(int i) {
        must(List.of("ip", "link", "set", hostLink(i), "down"));
    }

    void heal(int i) {
        must(List.of("ip", "link", "set", hostLink(i), "up"));
    }

    /** The command to start a process inside replica i's namespace. */
    List<String> inNamespace(int i, List<String> cmd) {
        List<String> all = new ArrayList<>(List.of("ip", "netns", "exec", namespace(i)));
        all.addAll(cmd);
        return all;
    }

    /** Removes every namespace and link made, in reverse order; safe to call twice. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (int k = made.size() - 1; k >= 0; k--) {
            String m = made.get(k);
            if (m.startsWith("ns:")) {
                run(List.of("ip", "netns", "del", m.substring(3)));
            } else if (m.startsWith("route:")) {
                run(List.of("ip", "route", "del", "unreachable", m.substring(6), "metric", "4000"));
            } else {
                run(List.of("ip", "link", "del", m.substring(5)));
            }
        }
    }

    private static void must(List<String> cmd) {
        Result r = exec(cmd);
        if (r.code != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed (" + r.code + "): " + r.out.trim());
        }
    }

    private static boolean ok(List<String> cmd) {
        return exec(cmd).code == 0;
    }

    private static void run(List<String> cmd) {
        exec(cmd);
    }

    private static String output(List<String> cmd) {
        return exec(cmd).out;
    }

    private record Result(int code, String out) {
    }

    private static Result exec(List<String> cmd) {
        try {
            Path out = Files.createTempFile("dqc-cmd-", ".txt");
            try {
                Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
                if (!p.waitFor(20, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    return new Result(-1, "timed out");
                }
                return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException e) {
            return new Result(-1, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, "interrupted");
        }
    }
}
