package io.delayq.bench;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.inject.Singleton;

/**
 * What the no-op observers saw: for job i (its id is the decimal index), the first processing
 * time (ms, this host's clock, which is Redis' clock: same machine) and how often it ran.
 * A {@code @Singleton}, not a client proxy: the replica app sets its fields directly.
 */
@Singleton
public class Recorder {
    private volatile long[] first = new long[0];
    private volatile AtomicIntegerArray runs = new AtomicIntegerArray(0);
    private final AtomicInteger distinct = new AtomicInteger();
    private final AtomicLong duplicates = new AtomicLong();
    private final AtomicLong lastProgressMs = new AtomicLong();
    /** In a replica process: records also go here, to be written to its records file. */
    final ConcurrentLinkedQueue<long[]> outbox = new ConcurrentLinkedQueue<>();
    volatile boolean replica;

    public synchronized void reset(int n) {
        first = new long[n];
        runs = new AtomicIntegerArray(n);
        distinct.set(0);
        duplicates.set(0);
        lastProgressMs.set(System.currentTimeMillis());
    }

    /** Called first thing by an observer. */
    public void record(String id) {
        long now = System.currentTimeMillis();
        int i;
        try {
            i = Integer.parseInt(id);
        } catch (NumberFormatException e) {
            return; // not a measured job (warm-up, backlog filler)
        }
        if (replica) {
            outbox.add(new long[] { i, now });
            return;
        }
        record(i, now);
    }

    void record(int i, long at) {
        if (i >= runs.length()) {
            return;
        }
        if (runs.getAndIncrement(i) == 0) {
            first[i] = at;
            distinct.incrementAndGet();
            lastProgressMs.set(System.currentTimeMillis());
        } else {
            duplicates.incrementAndGet();
        }
    }

    int distinct() {
        return distinct.get();
    }

    long duplicates() {
        return duplicates.get();
    }

    long lastProgressMs() {
        return lastProgressMs.get();
    }

    /** First processing time of job i, 0 when never processed. */
    long first(int i) {
        return first[i];
    }

    /**
     * Records the lines {@code "<index> <epoch ms>"} another process appended to {@code file} since
     * {@code offset} (lines that do not start with an index are skipped; a partial last line waits
     * for the next call); returns the new offset.
     */
    long readRecords(java.nio.file.Path file, long offset) {
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(file.toFile(), "r")) {
            if (f.length() <= offset) {
                return offset;
            }
            f.seek(offset);
            byte[] buf = new byte[(int) (f.length() - offset)];
            f.readFully(buf);
            int end = new String(buf, java.nio.charset.StandardCharsets.US_ASCII).lastIndexOf('\n') + 1;
            for (String line : new String(buf, 0, end, java.nio.charset.StandardCharsets.US_ASCII).split("\n")) {
                int sp = line.indexOf(' ');
                if (sp > 0 && Character.isDigit(line.charAt(0))) {
                    record(Integer.parseInt(line.substring(0, sp)), Long.parseLong(line.substring(sp + 1)));
                }
            }
            return offset + end;
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
