package io.delayq.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

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

    /** The median of the values (the mean of the middle two for an even count). */
    static double median(List<Double> values) {
        List<Double> s = new ArrayList<>(values);
        s.sort(null);
        int m = s.size() / 2;
        return s.size() % 2 == 1 ? s.get(m) : (s.get(m - 1) + s.get(m)) / 2;
    }

    /** This host's load average over the last minute, two decimals (what a figure was measured under). */
    static double loadAverage() {
        return BenchApp.round(java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(), 2);
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
