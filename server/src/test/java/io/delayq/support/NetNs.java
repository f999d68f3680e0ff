package io.delayq.support;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A network namespace joined to the host by a veth pair ({@code 10.231.X.1} on the host end,
 * {@code 10.231.X.2} inside, a /30 of its own): a process started in it ({@link #command}) reaches
 * the host only through the pair, so {@link #cut()} makes its connections hang exactly as a lost
 * node or a partition does (nothing is reset: reads and connects time out, in both directions),
 * and {@link #heal()} lets them carry on. The names carry this JVM's pid, so that a run killed
 * before its cleanup leaves namespaces the next run recognises and removes.
 *
 * <p>The cut points each end's neighbour entry at a MAC address nobody has, so that both ends drop
 * every frame across the pair while links and routes stay as they are. Taking the host end's link
 * down instead removes the host's connected route: the host's traffic for the namespace then
 * leaves by the default route, off the machine (a gateway answered a cut replica's HTTP calls
 * in the chaos soak), and the namespace's own connects fail at once with "no route" rather than
 * hang.
 *
 * <p>Needs root and iproute2's {@code ip}: without them {@link #create} throws with a message
 * that says so, and the test fails (CI has both; a fault test that skips proves nothing).
 */
public final class NetNs implements AutoCloseable {
    private static final String PREFIX = "dqf";
    /** A locally administered unicast MAC address no interface here has: frames sent to it are dropped. */
    private static final String NOBODY = "02:00:00:00:00:01";
    private static final AtomicInteger SEQ = new AtomicInteger();
    private final String name;
    private final String hostIf;
    private final String nsIf;
    private final int subnet;
    private final Thread cleanup;
    private volatile boolean closed;

    private NetNs(String name, String hostIf, String nsIf, int subnet) {
        this.name = name;
        this.hostIf = hostIf;
        this.nsIf = nsIf;
        this.subnet = subnet;
        this.cleanup = new Thread(this::remove, name + "-remove");
    }

    /** Creates the namespace and its veth pair, both ends up; removed by {@link #close()} or at JVM exit. */
    public static synchronized NetNs create() {
        requireRootAndIp();
        removeLeftovers();
        long pid = ProcessHandle.current().pid();
        int seq = SEQ.incrementAndGet();
        // Interface names are at most 15 characters: "dqf" + pid (up to 7 digits) + "h|n" + seq.
        String id = pid + "x" + seq;
        NetNs ns = new NetNs(PREFIX + "-" + id, PREFIX + id + "h", PREFIX + id + "n", freeSubnet());
        Runtime.getRuntime().addShutdownHook(ns.cleanup);
        try {
            ip("netns", "add", ns.name);
            ip("link", "add", ns.hostIf, "type", "veth", "peer", "name", ns.nsIf);
            ip("link", "set", ns.nsIf, "netns", ns.name);
            ip("addr", "add", ns.hostAddress() + "/30", "dev", ns.hostIf);
            ip("link", "set", ns.hostIf, "up");
            ip("netns", "exec", ns.name, "ip", "addr", "add", ns.nsAddress() + "/30", "dev", ns.nsIf);
            ip("netns", "exec", ns.name, "ip", "link", "set", ns.nsIf, "up");
            ip("netns", "exec", ns.name, "ip", "link", "set", "lo", "up");
            return ns;
        } catch (RuntimeException | Error e) {
            ns.close();
            throw e;
        }
    }

    /** The namespace's name, for {@code ip netns exec}. */
    public String name() {
        return name;
    }

    /** The host end of the veth pair. */
    public String hostInterface() {
        return hostIf;
    }

    /** The host end's address: where a process inside reaches the host's servers. */
    public String hostAddress() {
        return "10.231." + subnet + ".1";
    }

    /** The address of the namespace end: where the host reaches a process inside. */
    public String nsAddress() {
        return "10.231." + subnet + ".2";
    }

    /** The command prefixed so that it runs inside the namespace (its pid is the command's own: ip execs it). */
    public List<String> command(List<String> cmd) {
        List<String> full = new ArrayList<>(List.of(ipPath(), "netns", "exec", name));
        full.addAll(cmd);
        return full;
    }

    /**
     * Cuts the pair: every frame across it is dropped (each end sends to a MAC address nobody has),
     * so every connection across it hangs until {@link #heal()}.
     */
    public void cut() {
        ip("neigh", "replace", nsAddress(), "lladdr", NOBODY, "dev", hostIf, "nud", "permanent");
        ip("netns", "exec", name, "ip", "neigh", "replace", hostAddress(), "lladdr", NOBODY, "dev", nsIf, "nud", "permanent");
    }

    /** Heals the pair (the ends learn each other's address again by ARP): hung connections carry on. */
    public void heal() {
        ip("neigh", "del", nsAddress(), "dev", hostIf);
        ip("netns", "exec", name, "ip", "neigh", "del", hostAddress(), "dev", nsIf);
    }

    @Override
    public void close() {
        remove();
        if (Thread.currentThread() != cleanup) {
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException ignored) {
                // the JVM is already shutting down: the hook runs remove() again, harmlessly
            }
        }
    }

    private synchronized void remove() {
        if (closed) {
            return;
        }
        closed = true;
        // Deleting the namespace deletes its end of the pair, and with it the host end.
        run(false, ipPath(), "netns", "del", name);
        run(false, ipPath(), "link", "del", hostIf);
    }

    @Override
    public String toString() {
        return name + " (" + hostIf + " " + hostAddress() + " <-> " + nsIf + " " + nsAddress() + ")";
    }

    /** Namespaces (and their host ends) of earlier runs whose JVM is gone: a SIGKILLed test cleans up nothing. */
    private static void removeLeftovers() {
        for (String line : run(false, ipPath(), "netns", "list").split("\n")) {
            String ns = line.split(" ")[0];
            if (!ns.startsWith(PREFIX + "-")) {
                continue;
            }
            String id = ns.substring(PREFIX.length() + 1);
            long pid = Long.parseLong(id.substring(0, id.indexOf('x')));
            if (ProcessHandle.of(pid).isEmpty()) {
                run(false, ipPath(), "netns", "del", ns);
                run(false, ipPath(), "link", "del", PREFIX + id + "h");
            }
        }
    }

    /**
     * X of a 10.231.X.0/30 that no host address or route uses (another run's namespaces, the chaos
     * soak's routes), picked at random so that parallel runs differ.
     */
    private static int freeSubnet() {
        String used = run(true, ipPath(), "-o", "-4", "addr", "show") + " " + run(true, ipPath(), "-4", "route", "show")
                .replace("\n", "\n ");
        int start = ThreadLocalRandom.current().nextInt(256);
        for (int i = 0; i < 256; i++) {
            int x = (start + i) % 256;
            if (!used.contains(" 10.231." + x + ".")) {
                return x;
            }
        }
        throw new IllegalStateException("no free 10.231.X.0/30 on this host:\n" + used);
    }

    private static void requireRootAndIp() {
        if (!Files.isExecutable(Path.of(ipPathOrNull() == null ? "/nonexistent" : ipPathOrNull()))) {
            throw new IllegalStateException("the network-fault tests need iproute2's `ip` on PATH (apt-get install "
                    + "iproute2); they cannot cut a network without it, and a fault test that skips proves nothing");
        }
        String uid = run(true, "id", "-u").trim();
        if (!"0".equals(uid)) {
            throw new IllegalStateException("the network-fault tests must run as root (uid " + uid + " here): they create "
                    + "network namespaces and veth pairs with `ip netns add` / `ip link add`");
        }
    }

    private static void ip(String... args) {
        String[] cmd = new String[args.length + 1];
        cmd[0] = ipPath();
        System.arraycopy(args, 0, cmd, 1, args.length);
        run(true, cmd);
    }

    private static String ipPath() {
        String ip = ipPathOrNull();
        return ip == null ? "ip" : ip;
    }

    private static String ipPathOrNull() {
        String path = System.getenv("PATH");
        List<String> dirs = new ArrayList<>(path == null ? List.of() : List.of(path.split(File.pathSeparator)));
        dirs.addAll(List.of("/usr/sbin", "/sbin", "/usr/bin", "/bin")); // root's PATH is not always the test's
        for (String dir : dirs) {
            Path p = Path.of(dir, "ip");
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }

    /** Runs a command to its end; its output, or (when {@code check}) an exception naming it and its output. */
    static String run(boolean check, String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(String.join(" ", cmd) + " did not finish in 30 s");
            }
            String text = new String(out, StandardCharsets.UTF_8);
            if (check && p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", cmd) + " failed (exit " + p.exitValue() + "): " + text);
            }
            return text;
        } catch (IOException e) {
            if (check) {
                throw new IllegalStateException("cannot run " + String.join(" ", cmd), e);
            }
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
