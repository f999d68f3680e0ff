package io.delayq.support;

import java.net.http.HttpResponse;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A steady stream of single enqueues ({@code POST /jobs}, due a fixed delay later) at a fixed
 * rate, sent to the given replicas in turn. Each request runs on its own virtual thread, so one
 * that waits out a Redis outage does not slow the stream: the rate is what clients offer, as in
 * production. Records every reply, so a test can check that each accepted (2xx) job was delivered.
 */
public final class EnqueueStream implements AutoCloseable {
    /**
     * One enqueue: its id, the HTTP status (-1 when the replica did not answer), wall-clock times
     * and the runAt the reply gave (Redis time; 0 when not accepted).
     */
    public record Sent(String id, int status, long sentMs, long repliedMs, long runAtMs) {
        public boolean accepted() {
            return status >= 200 && status < 300;
        }
    }

    private static final java.util.regex.Pattern RUN_AT = java.util.regex.Pattern.compile("\"runAt\":\"([^\"]+)\"");
    private final String topic;
    private final String prefix;
    private final long delayMs;
    private final List<AppProcess> replicas;
    private final ConcurrentLinkedQueue<Sent> replies = new ConcurrentLinkedQueue<>();
    private final ExecutorService requests = Executors.newVirtualThreadPerTaskExecutor();
    private volatile boolean running;
    private Thread pacer;

    public EnqueueStream(String topic, String idPrefix, long delayMs, List<AppProcess> replicas) {
        this.topic = topic;
        this.prefix = idPrefix;
        this.delayMs = delayMs;
        this.replicas = replicas;
    }

    /** Starts sending {@code perSecond} enqueues a second until {@link #stop()}. */
    public EnqueueStream start(int perSecond) {
        running = true;
        long periodNanos = TimeUnit.SECONDS.toNanos(1) / perSecond;
        pacer = Thread.ofPlatform().name("enqueue-stream").daemon().start(() -> {
            long t0 = System.nanoTime();
            for (int i = 0; running; i++) {
                LockSupport.parkNanos(t0 + i * periodNanos - System.nanoTime());
                int seq = i;
                requests.execute(() -> send(seq));
            }
        });
        return this;
    }

    private void send(int seq) {
        String id = prefix + seq;
        AppProcess replica = replicas.get(seq % replicas.size());
        long sent = System.currentTimeMillis();
        int status;
        long runAt = 0;
        try {
            HttpResponse<String> r = replica.post("/jobs", "{\"topic\":\"" + topic + "\",\"id\":\"" + id
                    + "\",\"delayMs\":" + delayMs + ",\"payload\":" + seq + "}");
            status = r.statusCode();
            java.util.regex.Matcher m = RUN_AT.matcher(r.body());
            if (status / 100 == 2 && m.find()) {
                runAt = java.time.Instant.parse(m.group(1)).toEpochMilli();
            }
        } catch (RuntimeException e) {
            status = -1;
        }
        replies.add(new Sent(id, status, sent, System.currentTimeMillis(), runAt));
    }

    /** Stops sending and waits for the replies of requests still in flight. */
    public void stop() throws InterruptedException {
        running = false;
        if (pacer != null) {
            pacer.join();
        }
        requests.shutdown();
        if (!requests.awaitTermination(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("enqueue requests still unanswered 60 s after the stream stopped");
        }
    }

    /** Every reply so far, by the time its request was sent. */
    public List<Sent> replies() {
        return replies.stream().sorted(Comparator.comparingLong(Sent::sentMs)).toList();
    }

    public List<Sent> accepted() {
        return replies().stream().filter(Sent::accepted).toList();
    }

    /** How many requests got each status (-1: no answer). */
    public Map<Integer, Long> statusCounts() {
        Map<Integer, Long> counts = new TreeMap<>();
        replies.forEach(s -> counts.merge(s.status(), 1L, Long::sum));
        return counts;
    }

    @Override
    public void close() {
        running = false;
        requests.shutdownNow();
    }
}
