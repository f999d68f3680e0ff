package io.delayq.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;

/**
 * The chaos scenario's nemesis: 3–7 s (seeded) after the last fault ended it picks the next one,
 * its kind, target and length; kinds come in rounds of all five in a shuffled order, so that even
 * a 2-minute run meets each of them. Each fault is logged with its kind, target, start and end (epoch ms) to
 * {@code faults.txt} as it ends, and kept for the checker. Kinds, with lease L:
 * <ul>
 * <li>{@code kill}: SIGKILL a replica, restart it 2–10 s later; the fault ends when it is ready;</li>
 * <li>{@code freeze}: SIGSTOP a replica for L+2 … 2L s, then SIGCONT (a GC pause, a VM stall);</li>
 * <li>{@code partition}: its veth down for L+2 … 2.5L s, then up (a pod cut off from Redis and the target);</li>
 * <li>{@code redis-kill}: SIGKILL redis-server, restart it (same port, its AOF) 1–9 s later; ends when it answers;</li>
 * <li>{@code redis-pause}: {@code CLIENT PAUSE} 3–8 s, every command of every client held.</li>
 * </ul>
 * Freezes and partitions are longer than the lease on purpose: that is when a holder's jobs are
 * retaken, the one allowed duplicate. The Redis faults are shorter and longer than it.
 */
final class Nemesis {
    static final List<String> KINDS = List.of("kill", "freeze", "partition", "redis-kill", "redis-pause");

    /** One fault; target is the replica index, -1 for Redis. Times are epoch ms. */
    record Fault(String kind, int target, long start, long end) {
        boolean onReplica() {
            return target >= 0;
        }

        long length() {
            return end - start;
        }
    }

    private final List<ChaosReplica> replicas;
    private final ChaosNet net;
    private final RedisProcess redis;
    private final long leaseMs;
    private final Random random;
    private final PrintWriter log;
    private final List<Fault> faults = new ArrayList<>();
    /** Kinds still to come in this round: every kind once, in a seeded order, before any comes again. */
    private final List<String> deck = new ArrayList<>();

    Nemesis(List<ChaosReplica> replicas, ChaosNet net, RedisProcess redis, long leaseMs, long seed, Path dir) throws IOException {
        this.replicas = replicas;
        this.net = net;
        this.redis = redis;
        this.leaseMs = leaseMs;
        this.random = new Random(seed);
        this.log = new PrintWriter(Files.newBufferedWriter(dir.resolve("faults.txt")), true);
    }

    /**
     * Makes faults, one at a time, 3–7 s apart, until {@code untilMs}; returns when the last one
     * has ended (everything healed). One at a time so that each duplicate and each late job can be
     * put down to one fault, and some jobs fall due outside any.
     */
    void run(long untilMs) throws Exception {
        try {
            while (true) {
                Thread.sleep(3000 + random.nextInt(4001));
                if (System.currentTimeMillis() >= untilMs) {
                    return;
                }
                if (deck.isEmpty()) {
                    deck.addAll(KINDS);
                    Collections.shuffle(deck, random);
                }
                String kind = deck.remove(0);
                int target = kind.startsWith("redis") ? -1 : random.nextInt(replicas.size());
                long lengthMs = switch (kind) {
                    case "kill" -> 2000 + random.nextInt(8001);
                    case "freeze" -> leaseMs + 2000 + (long) (random.nextDouble() * (leaseMs - 2000));
                    case "partition" -> leaseMs + 2000 + (long) (random.nextDouble() * (1.5 * leaseMs - 2000));
                    case "redis-kill" -> 1000 + random.nextInt(8001);
                    default -> 3000 + random.nextInt(5001);
                };
                record(apply(kind, target, lengthMs));
            }
        } finally {
            log.close();
        }
    }

    private Fault apply(String kind, int target, long lengthMs) throws Exception {
        long start = System.currentTimeMillis();
        switch (kind) {
            case "kill" -> {
                ChaosReplica r = replicas.get(target);
                r.kill();
                Thread.sleep(lengthMs);
                r.start();
                if (!r.awaitReady(Duration.ofSeconds(90))) {
                    throw new IllegalStateException("replica " + target + " did not come back after its kill");
                }
            }
            case "freeze" -> {
                replicas.get(target).freeze();
                try {
                    Thread.sleep(lengthMs);
                } finally {
                    replicas.get(target).thaw();
                }
            }
            case "partition" -> {
                net.cut(target);
                try {
                    Thread.sleep(lengthMs);
                } finally {
                    net.heal(target);
                }
            }
            case "redis-kill" -> {
                ProcessHandle.of(redis.pid()).ifPresent(p -> {
                    p.destroyForcibly();
                    p.onExit().join();
                });
                Thread.sleep(lengthMs);
                redis.start(); // same port, same directory: it loads its AOF, then answers PING
            }
            case "redis-pause" -> {
                try (Resp r = new Resp(redis.port())) {
                    r.call("CLIENT", "PAUSE", lengthMs, "ALL");
                }
                Thread.sleep(lengthMs);
            }
            default -> throw new IllegalArgumentException(kind);
        }
        return new Fault(kind, target, start, System.currentTimeMillis());
    }

    private synchronized void record(Fault f) {
        faults.add(f);
        log.printf("%s %s %s %d %d %d%n", f.kind(), f.onReplica() ? "replica-" + f.target() : "redis",
                Instant.ofEpochMilli(f.start()), f.start(), f.end(), f.length());
        System.err.printf("  fault %-11s %-9s %s +%.1f s%n", f.kind(), f.onReplica() ? "replica-" + f.target() : "redis",
                Instant.ofEpochMilli(f.start()), f.length() / 1000.0);
    }

    synchronized List<Fault> faults() {
        return List.copyOf(faults);
    }
}
