package io.delayq.support;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * A local HTTP endpoint that replicas deliver jobs to (their HTTP target): records each delivery
 * with its arrival time, optionally holds it ({@code holdMs}) to play a long observer, or answers
 * 500 to play a failing one. A replica given {@link #url(String)} as its target is named in the
 * deliveries it makes ({@link Delivery#via()}).
 */
public final class Receiver implements AutoCloseable {
    /** One delivery as the receiver saw it. */
    public record Delivery(String id, int attempt, long receivedMs, String via) {
    }

    private final HttpServer server;
    public final Map<String, List<Delivery>> deliveries = new ConcurrentHashMap<>();
    public final Map<String, List<Delivery>> completed = new ConcurrentHashMap<>();
    public final AtomicLong inProgress = new AtomicLong();
    private volatile java.util.function.ToLongFunction<Delivery> hold = d -> 0;
    private volatile java.util.function.Predicate<Delivery> fail = d -> false;

    /** The {@code traceparent} header of each delivery of a job (none: no entry), in arrival order. */
    public final Map<String, List<String>> traceparents = new ConcurrentHashMap<>();

    public Receiver() {
        this(0);
    }

    /** On a given port (a test profile's target URL is fixed before the test runs: {@link FixedPort}). */
    public Receiver(int port) {
        try {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 512);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        server.createContext("/deliver", this::handle);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.start();
    }

    public String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/deliver";
    }

    /** The target URL for one replica: its deliveries carry {@code via} (a name without '&' or '='). */
    public String url(String via) {
        return url() + "?via=" + via;
    }

    public void holdFor(long ms) {
        hold = d -> ms;
    }

    /** Per-delivery hold time, e.g. long only for the first delivery of some ids. */
    public void holdBy(java.util.function.ToLongFunction<Delivery> rule) {
        hold = rule;
    }

    /** Deliveries for which the rule is true are answered 500 (after any hold): the attempt fails. */
    public void failBy(java.util.function.Predicate<Delivery> rule) {
        fail = rule;
    }

    private void handle(HttpExchange ex) throws IOException {
        long now = System.currentTimeMillis();
        String id = ex.getRequestHeaders().getFirst("X-Delayq-Job-Id");
        int attempt = Integer.parseInt(ex.getRequestHeaders().getFirst("X-Delayq-Attempt"));
        ex.getRequestBody().readAllBytes();
        String query = ex.getRequestURI().getRawQuery();
        String via = query != null && query.startsWith("via=") ? query.substring(4) : null;
        Delivery d = new Delivery(id, attempt, now, via);
        String traceparent = ex.getRequestHeaders().getFirst("traceparent");
        if (traceparent != null) {
            traceparents.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(traceparent);
        }
        deliveries.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(d);
        inProgress.incrementAndGet();
        try {
            long ms = hold.applyAsLong(d);
            if (ms > 0) {
                Thread.sleep(ms);
            }
            if (fail.test(d)) {
                ex.sendResponseHeaders(500, -1);
            } else {
                ex.sendResponseHeaders(204, -1);
                completed.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(d);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            inProgress.decrementAndGet();
            ex.close();
        }
    }

    public int distinct() {
        return deliveries.size();
    }

    /**
     * The longest time between two consecutive deliveries (of any job) in {@code [fromMs, toMs]}:
     * how long deliveries stopped during an outage, while a steady stream kept jobs falling due.
     * Deliveries after {@code toMs} (retries and reclaimed jobs after the stream ended) are left out.
     */
    public long longestGap(long fromMs, long toMs) {
        List<Long> times = new ArrayList<>();
        deliveries.values().forEach(ds -> ds.forEach(d -> {
            if (d.receivedMs() <= toMs) {
                times.add(d.receivedMs());
            }
        }));
        times.sort(null);
        long gap = 0;
        for (int i = 1; i < times.size(); i++) {
            if (times.get(i) >= fromMs) {
                gap = Math.max(gap, times.get(i) - times.get(i - 1));
            }
        }
        return gap;
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
