package io.delayq.bench;

import java.util.Arrays;

/** Nearest-rank percentiles, as the peers harness computes them. */
final class Stats {
    private Stats() {
    }

    static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return -1;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    static long[] sorted(long[] values, int n) {
        long[] copy = Arrays.copyOf(values, n);
        Arrays.sort(copy);
        return copy;
    }

    /** CPU seconds (user + system) of another process, from /proc/PID/stat. */
    static double cpuSeconds(long pid) {
        try {
            String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc", Long.toString(pid), "stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0; // utime, stime in clock ticks (100 Hz)
        } catch (Exception e) {
            return 0;
        }
    }

    /** CPU seconds of this JVM. */
    static double selfCpuSeconds() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime() / 1e9;
    }
}
