package io.delayq.support;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
    /** One delivery as the receiver saw it: a start of the job (its topic from {@code X-Delayq-Topic}). */
    public record Delivery(String id, int attempt, long receivedMs, String via, String topic) {
    }

    /**
     * What the receiver saw of one topic's jobs: the checker of the fault tests. A start is a
     * delivery; a job started more than once is a duplicate (whatever the attempt header says);
     * a delivery with an attempt above 1 was charged an attempt.
     */
    public record Tally(int distinct, int starts, Map<String, List<Delivery>> duplicates,
            Map<String, List<Delivery>> charged) {
        @Override
        public String toString() {
            return distinct + " job(s), " + starts + " start(s), " + duplicates.size() + " started more than once"
                    + (duplicates.isEmpty() ? "" : " " + abbreviate(duplicates)) + ", " + charged.size()
                    + " delivered as a later attempt" + (charged.isEmpty() ? "" : " " + abbreviate(charged));
        }

        private static String abbreviate(Map<String, List<Delivery>> m) {
            // id=[via/attempt, ...] for the first few: enough to see who started what again.
            return m.entrySet().stream().limit(5).map(e -> e.getKey() + "=" + e.getValue().stream()
                    .map(d -> d.via() + "/a" + d.attempt()).toList()).toList() + (m.size() > 5 ? " ..." : "");
        }
    }

    private final HttpServer server;
    private final String address;
    public final Map<String, List<Delivery>> deliveries = new ConcurrentHashMap<>();
    public final Map<String, List<Delivery>> completed = new ConcurrentHashMap<>();
    public final AtomicLong inProgress = new AtomicLong();
    /** The most deliveries in progress at once, and the sum of their times in progress, ns (concurrency caps). */
    public final AtomicLong peakInProgress = new AtomicLong();
    public final AtomicLong busyNanos = new AtomicLong();
    private volatile java.util.function.ToLongFunction<Delivery> hold = d -> 0;
    private volatile java.util.function.Predicate<Delivery> fail = d -> false;
    private volatile java.util.function.Function<Delivery, String> throttle = d -> null;
    private volatile java.util.function.Function<Delivery, CompletableFuture<?>> gate = d -> null;

    /** The {@code traceparent} header of each delivery of a job (none: no entry), in arrival order. */
    public final Map<String, List<String>> traceparents = new ConcurrentHashMap<>();

    public Receiver() {
        this("127.0.0.1", 0);
    }

    /** On a given port (a test profile's target URL is fixed before the test runs: {@link FixedPort}). */
    public Receiver(int port) {
        this("127.0.0.1", port);
    }

    /**
     * A receiver bound to one address: the host end of a {@link NetNs} serves replicas inside the
     * namespace and, from the host, those outside it.
     */
    public Receiver(String bindAddress) {
        this(bindAddress, 0);
    }

    private Receiver(String bindAddress, int port) {
        this.address = bindAddress;
        try {
            server = HttpServer.create(new InetSocketAddress(bindAddress, port), 512);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        server.createContext("/deliver", this::handle);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.start();
    }

    public String url() {
        return "http://" + address + ":" + server.getAddress().getPort() + "/deliver";
    }

    /** The target URL for one replica: its deliveries carry {@code via} (a name without '&' or '='). */
    public String url(String via) {
        return url() + "?via=" + via;
    }

    /**
     * Counts calls in progress per key (e.g. a job's group, from its id) beside the total: see
     * {@link #peakBy}. Set before the calls come.
     */
    public void countBy(java.util.function.Function<Delivery, String> key) {
        countKey = key;
    }

    /** The most calls of each key (see {@link #countBy}) that were in progress at once. */
    public final Map<String, AtomicLong> peakBy = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> inProgressBy = new ConcurrentHashMap<>();
    private volatile java.util.function.Function<Delivery, String> countKey;

    public void holdFor(long ms) {
        hold = d -> ms;
    }

    /** Per-delivery hold time, e.g. long only for the first delivery of some ids. */
    public void holdBy(java.util.function.ToLongFunction<Delivery> rule) {
        hold = rule;
    }

    /**
     * Per-delivery gate: a delivery whose future is not null is answered (after any hold) only
     * once the future completes, or after 2 minutes: a job that runs until the test lets it end.
     */
    public void gateBy(java.util.function.Function<Delivery, CompletableFuture<?>> rule) {
        gate = rule;
    }

    /** Deliveries for which the rule is true are answered 500 (after any hold): the attempt fails. */
    public void failBy(java.util.function.Predicate<Delivery> rule) {
        fail = rule;
    }

    /**
     * Deliveries for which the rule gives a value are answered 429 with that {@code Retry-After}
     * (after any hold): an overloaded target.
     */
    public void throttleBy(java.util.function.Function<Delivery, String> rule) {
        throttle = rule;
    }

    private void handle(HttpExchange ex) throws IOException {
        long now = System.currentTimeMillis();
        String id = ex.getRequestHeaders().getFirst("X-Delayq-Job-Id");
        int attempt = Integer.parseInt(ex.getRequestHeaders().getFirst("X-Delayq-Attempt"));
        ex.getRequestBody().readAllBytes();
        String query = ex.getRequestURI().getRawQuery();
        String via = query != null && query.startsWith("via=") ? query.substring(4) : null;
        Delivery d = new Delivery(id, attempt, now, via, ex.getRequestHeaders().getFirst("X-Delayq-Topic"));
        String traceparent = ex.getRequestHeaders().getFirst("traceparent");
        if (traceparent != null) {
            traceparents.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(traceparent);
        }
        deliveries.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(d);
        peakInProgress.accumulateAndGet(inProgress.incrementAndGet(), Math::max);
        java.util.function.Function<Delivery, String> byKey = countKey;
        String key = byKey == null ? null : byKey.apply(d);
        if (key != null) {
            long n = inProgressBy.computeIfAbsent(key, k -> new AtomicLong()).incrementAndGet();
            peakBy.computeIfAbsent(key, k -> new AtomicLong()).accumulateAndGet(n, Math::max);
        }
        long began = System.nanoTime();
        Runnable ended = new Runnable() {
            private boolean done;

            @Override
            public void run() {
                if (!done) {
                    done = true;
                    if (key != null) {
                        inProgressBy.get(key).decrementAndGet();
                    }
                    inProgress.decrementAndGet();
                    busyNanos.addAndGet(System.nanoTime() - began);
                }
            }
        };
        try {
            long ms = hold.applyAsLong(d);
            if (ms > 0) {
                Thread.sleep(ms);
            }
            CompletableFuture<?> until = gate.apply(d);
            if (until != null) {
                try {
                    until.get(2, TimeUnit.MINUTES);
                } catch (ExecutionException | TimeoutException e) {
                    // the test gave up on it: answer anyway
                }
            }
            String retryAfter = throttle.apply(d);
            boolean failed = retryAfter == null && fail.test(d);
            // The call's work ends here, before the answer leaves: once it has, delayq may start the
            // next call (of a group, or under a cap) at once, and this thread, descheduled on a busy
            // machine, would otherwise still count this one as running when the next one arrives.
            ended.run();
            if (retryAfter != null) {
                ex.getResponseHeaders().add("Retry-After", retryAfter);
                ex.sendResponseHeaders(429, -1);
            } else if (failed) {
                ex.sendResponseHeaders(500, -1);
            } else {
                ex.sendResponseHeaders(204, -1);
                completed.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(d);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            ended.run();
            ex.close();
        }
    }

    public int distinct() {
        return deliveries.size();
    }

    /** Deliveries of one topic's jobs, by job id. */
    public Map<String, List<Delivery>> of(String topic) {
        Map<String, List<Delivery>> out = new TreeMap<>();
        deliveries.forEach((id, ds) -> {
            List<Delivery> mine = ds.stream().filter(d -> topic.equals(d.topic())).toList();
            if (!mine.isEmpty()) {
                out.put(id, mine);
            }
        });
        return out;
    }

    /** Starts of one job of a topic (0 when it was never delivered). */
    public int starts(String topic, String id) {
        return of(topic).getOrDefault(id, List.of()).size();
    }

    /** Counts of one topic's deliveries: jobs, starts, duplicates, attempts charged. */
    public Tally tally(String topic) {
        Map<String, List<Delivery>> all = of(topic);
        Map<String, List<Delivery>> twice = new TreeMap<>();
        Map<String, List<Delivery>> charged = new TreeMap<>();
        all.forEach((id, ds) -> {
            if (ds.size() > 1) {
                twice.put(id, ds);
            }
            if (ds.stream().anyMatch(d -> d.attempt() > 1)) {
                charged.put(id, ds);
            }
        });
        return new Tally(all.size(), all.values().stream().mapToInt(List::size).sum(), twice, charged);
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
