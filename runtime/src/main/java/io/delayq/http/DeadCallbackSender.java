package io.delayq.http;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.store.DeadCallbackStore.CallbackOutcome;
import io.delayq.store.DeadCallbackStore.DeadCallback;
import io.delayq.store.DeadCallbackStore;
import io.delayq.store.Partition;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.tls.TlsConfiguration;
import io.quarkus.tls.TlsConfigurationRegistry;
import io.vertx.core.Context;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.impl.VertxInternal;
import io.vertx.core.json.Json;

/**
 * Sends dead-job callbacks: for a topic with {@code delayq.topics.<t>.dead-url}, a POST of
 * {@code {"topic","id","attempts","lostAttempts","lastError","diedAt","payload"}} for each job of
 * the topic that went to the dead set, signed when the topic has signing keys, with headers
 * {@code X-Delayq-Topic}, {@code X-Delayq-Job-Id}, {@code X-Delayq-Attempt} (the callback's try) and
 * {@code X-Delayq-Event: dead}. 2xx = delivered; anything else is tried again with backoff up to
 * {@code delayq.callbacks.max-attempts}, then counted ({@code delayq.callbacks.failed}), logged at
 * WARN and kept for the dashboard.
 *
 * <p>Who sends: every replica configured with the topic's dead-url, not only those that serve the
 * topic. The callback is recorded in Redis by the script that buries the job (its partition's
 * {@code callbacks} set), so a replica SIGKILLed right after the burial loses nothing; but the URL
 * and the signing keys are configuration (the keys are secrets: never written to Redis), so only
 * a replica that has them can send it. Serving the topic is not needed and would be the wrong
 * test: a topic's callbacks must go out while its target is down, its replicas draining, or its
 * only serving replica dead. Each replica claims due callbacks with a script (a claim of the
 * timeout plus a second, after which any other replica takes them again), so they go out once in
 * the normal case and at least once when a sender dies mid-call.
 *
 * <p>The burying replica is told at once ({@link DeadCallbackStore#onCallbackRecorded}) and sends without
 * waiting for its poll; the poll ({@code delayq.callbacks.poll-interval}: one read of every such
 * partition's earliest callback, one command on a single Redis, then the claim script only where
 * one is due) is for retries and for callbacks another replica left behind. All calls and their Macs run on one event loop of this sender's own, apart from every HTTP target's: a dead
 * target, whose own calls time out, does not hold up its callbacks.
 *
 * <p>At most {@code delayq.callbacks.max-in-flight} callbacks are in flight on a replica, over all
 * topics and partitions (one pool of permits, the size of the connection pool): a poll claims only
 * as many as are free, so a claimed callback never waits for a connection while its claim runs out
 * (a second copy from another replica), and a callback that could not get a connection is never
 * counted as a failed try. Each call has one deadline, {@code timeout}, from asking for a connection
 * to the end of the answer; the claim is that plus {@link #CLAIM_MARGIN_MS}.
 */
@ApplicationScoped
public class DeadCallbackSender {
    private static final Logger LOG = Logger.getLogger(DeadCallbackSender.class);
    private static final int BATCH = 50;
    /** A claim outlives its call's deadline by this much: the settle's round trip, a pause of the JVM. */
    static final long CLAIM_MARGIN_MS = 5000;
    /**
     * Longest wait for a claim or a settle before its permits are given back: a hung master's
     * answer is not waited for (what it applied late is safe, see poll and settle).
     */
    static final long STORE_WAIT_MS = 1000;
    private final DeadCallbackStore store;
    private final DelayqConfig.Callbacks config;
    private final Vertx vertx;
    private final MeterRegistry registry;
    private final Map<String, Target> targets = new LinkedHashMap<>();
    /** Partitions with a claim running now: one at a time each. */
    private final Set<Partition> polling = ConcurrentHashMap.newKeySet();
    private final Set<Partition> pollAgain = ConcurrentHashMap.newKeySet();
    /** Partitions whose head read is unanswered: no second one alongside (a hung master piles none up). */
    private final Set<Partition> reading = ConcurrentHashMap.newKeySet();
    /** Partitions looked at since this replica started (their cbnext is known to be kept). */
    private final Set<Partition> looked = ConcurrentHashMap.newKeySet();
    /** Partitions that had due callbacks while no permit was free, polled as permits come back. On the loop. */
    private final Set<Partition> waiting = new java.util.LinkedHashSet<>();
    /** Callbacks this replica may still send at once. On the loop. */
    private int permits;
    private Context context;
    /** One client per TLS configuration the topics' callbacks use ("" for the default one). */
    private final Map<String, HttpClient> clients = new java.util.HashMap<>();
    private final TlsConfigurationRegistry tls;
    private long timer = -1;
    private volatile boolean stopped;

    /** A topic's callback endpoint; {@code tlsName} is its {@code http.tls-configuration-name} ("" for the default). */
    private record Target(String topic, String url, URI uri, RequestSigner signer, Counter failed, String tlsName) {
    }

    public DeadCallbackSender(DeadCallbackStore store, DelayqConfig config, Vertx vertx, MeterRegistry registry,
            TlsConfigurationRegistry tls) {
        this.tls = tls;
        this.store = store;
        this.config = config.callbacks();
        this.vertx = vertx;
        this.registry = registry;
        config.topics().forEach((topic, t) -> t.deadUrl().ifPresent(url -> {
            URI uri = TargetUrls.parse("delayq.topics." + topic + ".dead-url", url);
            if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
                throw new IllegalStateException("delayq.topics." + topic + ".dead-url must be an http(s) URL: " + TargetUrls.redact(url));
            }
            Optional<RequestSigner> signer = RequestSigner.of(topic, t.http().signingKeys());
            // Errors name the URL as it may be shown (they become the callback's lastError).
            targets.put(topic, new Target(topic, TargetUrls.redact(url), uri, signer.orElse(null), Counter.builder("delayq.callbacks.failed")
                    .description("Dead-job callbacks that failed for good (after their last try)").tag("topic", topic)
                    .register(registry), t.http().tlsConfigurationName().orElse("")));
        }));
    }

    void onStart(@Observes StartupEvent event) {
        if (targets.isEmpty()) {
            return;
        }
        context = ((VertxInternal) vertx).createEventLoopContext();
        long timeoutMs = Math.max(1, config.timeout().toMillis());
        permits = Math.max(1, config.maxInFlight());
        // The TLS configuration a topic's target is called with (http.tls-configuration-name, else
        // Quarkus' default one) serves its callbacks too: an internal CA trusted for the target is
        // trusted for the dead-url.
        for (Target target : targets.values()) {
            clients.computeIfAbsent(target.tlsName(), name -> {
                HttpClientOptions options = new HttpClientOptions()
                        .setConnectTimeout((int) Math.min(Integer.MAX_VALUE, timeoutMs))
                        .setKeepAlive(true).setKeepAliveTimeout(4).setVerifyHost(true);
                HttpTargetHandler.trust(options, TlsConfiguration.from(tls,
                        name.isEmpty() ? Optional.empty() : Optional.of(name)).orElse(null));
                return vertx.createHttpClient(options, new PoolOptions().setHttp1MaxSize(permits).setHttp2MaxSize(permits));
            });
        }
        store.onCallbackRecorded(p -> context.runOnContext(v -> poll(p)));
        long skewMs = 1000; // Redis' clock may be ahead of this host's: a callback due by it is not left a poll longer
        context.runOnContext(v -> {
            timer = vertx.setPeriodic(200, Math.max(100, config.pollInterval().toMillis()), id -> pollAll(skewMs));
        });
    }

    void onStop(@Observes @Priority(2) ShutdownEvent event) {
        stopped = true;
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
        // Claimed callbacks not settled by now fall due again after their claim, for another replica.
    }

    /** Topics this replica sends dead-job callbacks for. */
    public Set<String> topics() {
        return targets.keySet();
    }

    /**
     * Looks at each partition's earliest callback first (its cbnext key) and claims only where one
     * is due: idle topics with a dead-url then cost one MGET per poll for all their partitions on a
     * single Redis (one GET per partition on a cluster), not a script; a partition whose last read
     * is unanswered is left out. The first look at a partition reads its callbacks themselves once.
     */
    private void pollAll(long skewMs) {
        List<Partition> known = new java.util.ArrayList<>();
        List<Partition> fresh = new java.util.ArrayList<>();
        for (String topic : targets.keySet()) {
            for (Partition p : store.partitionsOf(topic)) {
                if (reading.add(p)) {
                    (looked.contains(p) ? known : fresh).add(p);
                }
            }
        }
        read(known, false, skewMs);
        read(fresh, true, skewMs);
    }

    private void read(List<Partition> ps, boolean firstLook, long skewMs) {
        if (ps.isEmpty()) {
            return;
        }
        List<io.vertx.core.Future<Long>> heads;
        try {
            heads = store.nextCallbacksAsync(ps, firstLook);
        } catch (RuntimeException e) {
            reading.removeAll(ps);
            return;
        }
        for (int i = 0; i < ps.size(); i++) {
            Partition p = ps.get(i);
            heads.get(i).onComplete(ar -> {
                if (ar.succeeded()) {
                    looked.add(p);
                }
                reading.remove(p);
                if (ar.succeeded() && ar.result() >= 0 && ar.result() <= System.currentTimeMillis() + skewMs) {
                    context.runOnContext(v -> poll(p));
                }
            });
        }
    }

    /** Claims the partition's due callbacks and sends them; asks again while a full batch came back. On the loop. */
    private void poll(Partition p) {
        if (stopped) {
            return;
        }
        if (!polling.add(p)) {
            pollAgain.add(p); // a burial while a poll runs: look again after it, not alongside it
            return;
        }
        int limit = Math.min(BATCH, permits);
        if (limit == 0) {
            polling.remove(p);
            pollAgain.remove(p);
            waiting.add(p); // claimed now, it would wait for a connection while its claim runs out
            return;
        }
        permits -= limit; // held while the claim runs, so that another partition's poll cannot take them too
        long claimMs = Math.max(1, config.timeout().toMillis()) + CLAIM_MARGIN_MS;
        // A claim unanswered within STORE_WAIT_MS gives its permits back (a hung master must not
        // hold every topic's callbacks for a whole Redis timeout); if Redis applied it later, the
        // claimed callbacks fall due again when the claim runs out.
        store.takeCallbacksAsync(p, limit, claimMs).timeout(STORE_WAIT_MS, java.util.concurrent.TimeUnit.MILLISECONDS)
                .onComplete(ar -> context.runOnContext(v -> {
            if (ar.failed()) {
                LOG.debugf("dead-job callbacks of %s not read: %s", p, ar.cause().toString()); // the next poll tries again
                release(limit);
                done(p, false);
                return;
            }
            List<DeadCallback> due = ar.result();
            permits += limit - due.size();
            for (DeadCallback c : due) {
                send(targets.get(p.topic()), c, () -> release(1));
            }
            // The partition's poll ends as its calls start (each holds a permit, not the poll): a
            // hung call does not keep the partition's other callbacks from going out on free permits.
            done(p, due.size() == limit);
            release(0);
        }));
    }

    private void done(Partition p, boolean full) {
        polling.remove(p);
        if (pollAgain.remove(p) || full) {
            poll(p);
        }
    }

    /** Gives back permits; a partition left waiting for one is polled again. On the loop. */
    private void release(int n) {
        permits += n;
        while (permits > 0 && !waiting.isEmpty() && !stopped) {
            var it = waiting.iterator();
            Partition p = it.next();
            it.remove();
            int before = permits;
            poll(p);
            if (permits == before) {
                break; // its poll is already running: it looks again after it (pollAgain)
            }
        }
    }

    private void send(Target target, DeadCallback c, Runnable then) {
        byte[] body = body(target.topic(), c).getBytes(StandardCharsets.UTF_8);
        MultiMap headers = HttpHeaders.headers().add(HttpHeaders.CONTENT_TYPE, "application/json")
                .add("X-Delayq-Topic", target.topic()).add("X-Delayq-Job-Id", c.id())
                .add("X-Delayq-Attempt", Integer.toString(c.tries())).add("X-Delayq-Event", "dead");
        URI u = target.uri();
        TargetUrls.basicAuthorization(u).ifPresent(a -> headers.add(HttpHeaders.AUTHORIZATION, a));
        boolean ssl = "https".equals(u.getScheme());
        String path = (u.getRawPath() == null || u.getRawPath().isEmpty() ? "/" : u.getRawPath())
                + (u.getRawQuery() == null ? "" : "?" + u.getRawQuery());
        long timeoutMs = Math.max(1, config.timeout().toMillis());
        RequestOptions request = new RequestOptions().setMethod(HttpMethod.POST).setHost(u.getHost())
                .setPort(u.getPort() > 0 ? u.getPort() : ssl ? 443 : 80).setSsl(ssl).setURI(path).setHeaders(headers)
                .setConnectTimeout(timeoutMs);
        // One deadline for the whole call (a request timeout would bound the wait for a connection
        // and each idle spell apart, so a call could run twice as long as its claim allows).
        boolean[] over = { false };
        HttpClientRequest[] sent = { null };
        long timer = vertx.setTimer(timeoutMs, id -> {
            if (!over[0]) {
                over[0] = true;
                if (sent[0] != null) {
                    sent[0].reset();
                }
                settle(target, c, target.url() + ": no answer within " + timeoutMs + " ms", then);
            }
        });
        clients.get(target.tlsName()).request(request).compose(req -> {
            sent[0] = req;
            if (over[0]) {
                req.reset();
                return io.vertx.core.Future.failedFuture("timed out");
            }
            if (target.signer() != null) {
                // Signed as it leaves, connection in hand: t is never older than the call.
                req.putHeader("X-Delayq-Signature",
                        target.signer().sign(System.currentTimeMillis(), target.topic(), c.id(), c.tries(), body));
            }
            return req.send(Buffer.buffer(body));
        }).compose(resp -> resp.end().map(v -> resp.statusCode()))
                .onComplete(ar -> {
                    if (over[0]) {
                        return;
                    }
                    over[0] = true;
                    vertx.cancelTimer(timer);
                    String error = ar.failed() ? target.url() + ": " + ar.cause()
                            : ar.result() / 100 == 2 ? null : target.url() + " answered " + ar.result();
                    settle(target, c, error, then);
                });
    }

    private void settle(Target target, DeadCallback c, String error, Runnable then) {
        CallbackOutcome outcome = error == null ? CallbackOutcome.DONE
                : c.tries() >= Math.max(1, config.maxAttempts()) ? CallbackOutcome.FAILED : CallbackOutcome.RETRY;
        long delay = Math.min(config.retryMax().toMillis(),
                config.retryInitial().toMillis() << Math.min(30, Math.max(0, c.tries() - 1)));
        store.settleCallbackAsync(c, outcome, delay, error == null ? "" : error)
                .timeout(STORE_WAIT_MS, java.util.concurrent.TimeUnit.MILLISECONDS)
                .onComplete(ar -> context.runOnContext(v -> {
            if (ar.failed()) {
                // Left claimed: it falls due again after its claim and is sent again (at least once).
                LOG.debugf("dead-job callback of %s/%s not settled: %s", target.topic(), c.id(), ar.cause().toString());
            } else if (ar.result() && outcome == CallbackOutcome.FAILED) {
                target.failed().increment();
                LOG.warnf("dead-job callback of job %s of topic %s (died %s) failed for good after %d tries: %s",
                        c.id(), target.topic(), Instant.ofEpochMilli(c.diedAt()), c.tries(), error);
            } else if (ar.result() && outcome == CallbackOutcome.RETRY) {
                LOG.debugf("dead-job callback of %s/%s, try %d failed (again in %d ms): %s", target.topic(), c.id(),
                        c.tries(), delay, error);
            }
            then.run();
        }));
    }

    /** The callback's body, as the contract fixes it; the payload as stored (raw JSON), null when none. */
    static String body(String topic, DeadCallback c) {
        String payload = c.record().payload();
        return "{\"topic\":" + Json.encode(topic) + ",\"id\":" + Json.encode(c.id()) + ",\"attempts\":"
                + c.record().attempts() + ",\"lostAttempts\":" + c.record().lostAttempts() + ",\"lastError\":"
                + Json.encode(c.record().lastError()) + ",\"diedAt\":" + Json.encode(Instant.ofEpochMilli(c.diedAt()).toString())
                + ",\"payload\":" + (payload == null || payload.isEmpty() ? "null" : payload) + "}";
    }
}
