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
    /** For job i: when its attempt ended by interruption (the cancel scenario), and which process ran it. */
    private volatile long[] ended = new long[0];
    private volatile int[] holder = new int[0];
    private final AtomicInteger distinct = new AtomicInteger();
    private final AtomicLong duplicates = new AtomicLong();
    private final AtomicLong lastProgressMs = new AtomicLong();
    /** In a replica process: records also go here, to be written to its records file. */
    final ConcurrentLinkedQueue<long[]> outbox = new ConcurrentLinkedQueue<>();
    volatile boolean replica;

    public synchronized void reset(int n) {
        first = new long[n];
        runs = new AtomicIntegerArray(n);
        ended = new long[n];
        holder = new int[n];
        distinct.set(0);
        duplicates.set(0);
        lastProgressMs.set(System.currentTimeMillis());
    }

    /** Called first thing by an observer. */
    public void record(String id) {
        note(id, false);
    }

    /**
     * Called by an observer whose attempt was interrupted (its cancel reached it). In a replica
     * process it goes to the records file as {@code -<index+1> <epoch ms>}.
     */
    public void ended(String id) {
        note(id, true);
    }

    private void note(String id, boolean end) {
        long now = System.currentTimeMillis();
        int i;
        try {
            i = Integer.parseInt(id);
        } catch (NumberFormatException e) {
            return; // not a measured job (warm-up, backlog filler)
        }
        if (replica) {
            outbox.add(new long[] { end ? -1 - i : i, now });
        } else if (end) {
            ended(i, now);
        } else {
            record(i, now, 0);
        }
    }

    private void ended(int i, long at) {
        if (i < ended.length && ended[i] == 0) {
            ended[i] = at;
        }
    }

    /** When job i's attempt was interrupted, 0 when not (yet). */
    long ended(int i) {
        return ended[i];
    }

    /** The process that first ran job i: 0 this one, r an extra replica (its index + 1). */
    int holder(int i) {
        return holder[i];
    }

    void record(int i, long at, int source) {
        if (i >= runs.length()) {
            return;
        }
        if (runs.getAndIncrement(i) == 0) {
            first[i] = at;
            holder[i] = source;
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
     * {@code offset} ({@code "-<index+1> <epoch ms>"}: an attempt that ended interrupted; other lines
     * are skipped; a partial last line waits for the next call); returns the new offset.
     */
    long readRecords(java.nio.file.Path file, long offset) {
        return readRecords(file, offset, 0);
    }

    /** As above, the records' process being {@code source} ({@link #holder}). */
    long readRecords(java.nio.file.Path file, long offset, int source) {
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
                    record(Integer.parseInt(line.substring(0, sp)), Long.parseLong(line.substring(sp + 1)), source);
                } else if (sp > 1 && line.charAt(0) == '-') {
                    ended(-1 - Integer.parseInt(line.substring(0, sp)), Long.parseLong(line.substring(sp + 1)));
                }
            }
            return offset + end;
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
