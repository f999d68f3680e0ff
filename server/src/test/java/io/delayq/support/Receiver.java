package io.delayq.support;

import java.io.IOException;
import java.net.InetSocketAddress;
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
 * with its arrival time, optionally holds it ({@code holdMs}) to play a long observer.
 */
public final class Receiver implements AutoCloseable {
    /** One delivery as the receiver saw it. */
    public record Delivery(String id, int attempt, long receivedMs) {
    }

    private final HttpServer server;
    public final Map<String, List<Delivery>> deliveries = new ConcurrentHashMap<>();
    public final Map<String, List<Delivery>> completed = new ConcurrentHashMap<>();
    public final AtomicLong inProgress = new AtomicLong();
    private volatile java.util.function.ToLongFunction<Delivery> hold = d -> 0;

    public Receiver() {
        try {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 512);
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

    public void holdFor(long ms) {
        hold = d -> ms;
    }

    /** Per-delivery hold time, e.g. long only for the first delivery of some ids. */
    public void holdBy(java.util.function.ToLongFunction<Delivery> rule) {
        hold = rule;
    }

    private void handle(HttpExchange ex) throws IOException {
        long now = System.currentTimeMillis();
        String id = ex.getRequestHeaders().getFirst("X-Delayq-Job-Id");
        int attempt = Integer.parseInt(ex.getRequestHeaders().getFirst("X-Delayq-Attempt"));
        ex.getRequestBody().readAllBytes();
        Delivery d = new Delivery(id, attempt, now);
        deliveries.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(d);
        inProgress.incrementAndGet();
        try {
            long ms = hold.applyAsLong(d);
            if (ms > 0) {
                Thread.sleep(ms);
            }
            ex.sendResponseHeaders(204, -1);
            completed.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(d);
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

    @Override
    public void close() {
        server.stop(0);
    }
}
