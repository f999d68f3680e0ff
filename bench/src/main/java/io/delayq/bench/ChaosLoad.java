package io.delayq.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The chaos scenario's producer: {@code rate} jobs per second, each {@code POST /jobs} with an id
 * of its own and a runAt 0–3 s ahead, sent to the replicas in turn. As a careful client does, it
 * retries a job that got no answer or a 5xx on the next replica, same id and runAt, for up to
 * 60 s (the topic remembers succeeded ids, so a retry of a job that already ran answers 200 and
 * runs nothing). A job is accepted once any replica answered 201 or 200; its runAt is its due time.
 */
final class ChaosLoad {
    /** A job the producer tried: its due time, when it was first sent and when it was accepted (0: never). */
    record Sent(long runAt, long firstSent, long accepted, int tries, int lastStatus) {
    }

    static final String TOPIC = "chaos";
    private static final long GIVE_UP_MS = 60_000;
    /** Per try: on a shared, busy machine a healthy replica can take seconds to answer. */
    private static final Duration TRY_TIMEOUT = Duration.ofSeconds(8);
    private final List<ChaosReplica> replicas;
    private final int rate;
    private final Random random;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1))
            .executor(Executors.newVirtualThreadPerTaskExecutor()).build();
    final ConcurrentHashMap<String, Sent> sent = new ConcurrentHashMap<>();
    private final AtomicLong requests = new AtomicLong();

    ChaosLoad(List<ChaosReplica> replicas, int rate, long seed) {
        this.replicas = replicas;
        this.rate = rate;
        this.random = new Random(seed * 7 + 1);
    }

    /** Sends jobs at the rate until {@code untilMs}, then waits until every one is accepted or given up. */
    void run(long untilMs) throws InterruptedException {
        ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor();
        long t0 = System.nanoTime();
        long seq = 0;
        while (System.currentTimeMillis() < untilMs) {
            long dueNs = t0 + seq * 1_000_000_000L / rate;
            long waitNs = dueNs - System.nanoTime();
            if (waitNs > 0) {
                TimeUnit.NANOSECONDS.sleep(waitNs);
            }
            String id = "j" + seq;
            long runAt = System.currentTimeMillis() + random.nextInt(3001);
            int first = (int) (seq % replicas.size());
            clients.submit(() -> send(id, runAt, first));
            seq++;
        }
        clients.shutdown();
        clients.awaitTermination(GIVE_UP_MS + 60_000, TimeUnit.MILLISECONDS);
    }

    private void send(String id, long runAt, int first) {
        String body = "{\"topic\":\"" + TOPIC + "\",\"id\":\"" + id + "\",\"runAt\":\"" + Instant.ofEpochMilli(runAt)
                + "\",\"payload\":{\"id\":\"" + id + "\"}}";
        long start = System.currentTimeMillis();
        int tries = 0;
        int status = -1;
        while (System.currentTimeMillis() - start < GIVE_UP_MS) {
            ChaosReplica r = replicas.get((first + tries) % replicas.size());
            tries++;
            requests.incrementAndGet();
            try {
                HttpResponse<String> resp = http.send(HttpRequest.newBuilder(URI.create(r.base() + "/jobs"))
                        .timeout(TRY_TIMEOUT).header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
                status = resp.statusCode();
                if (status == 201 || status == 200) {
                    sent.put(id, new Sent(runAt, start, System.currentTimeMillis(), tries, status));
                    return;
                }
                if (status < 500) {
                    break; // the request itself is wrong: retrying cannot help, and the checker reports it
                }
            } catch (IOException e) {
                status = -1; // no answer: refused, timed out, cut off
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        sent.put(id, new Sent(runAt, start, 0, tries, status));
    }

    long requests() {
        return requests.get();
    }

    /** Every job tried, one line each ({@code id runAt firstSent accepted tries lastStatus}), for a look afterwards. */
    void write(java.nio.file.Path file) throws IOException {
        List<String> lines = new java.util.ArrayList<>();
        sent.forEach((id, s) -> lines.add(id + " " + s.runAt() + " " + s.firstSent() + " " + s.accepted() + " " + s.tries()
                + " " + s.lastStatus()));
        java.nio.file.Files.write(file, lines);
    }

    /** Jobs never accepted, by the status of their last try (-1: no answer). */
    java.util.Map<String, Long> notAcceptedByStatus() {
        java.util.Map<String, Long> m = new java.util.TreeMap<>();
        sent.values().stream().filter(s -> s.accepted() == 0).forEach(s -> m.merge(Integer.toString(s.lastStatus()), 1L, Long::sum));
        return m;
    }
}
