package io.delayq.http;

import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

import io.delayq.core.Job;
import io.delayq.core.PermanentJobFailureException;
import io.delayq.dispatch.AttemptContext;
import io.delayq.dispatch.JobHandler;
import io.delayq.dispatch.JobRunner;
import io.delayq.dispatch.TopicThrottledException;
import io.quarkus.tls.TlsConfiguration;
import io.vertx.core.Context;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.impl.VertxInternal;
import io.vertx.core.tracing.TracingPolicy;

/**
 * The built-in observer of a topic with {@code delayq.topics.<topic>.http.url}: POSTs the job's
 * payload there with {@code X-Delayq-Job-Id}, {@code X-Delayq-Topic} and {@code X-Delayq-Attempt}
 * (and {@code traceparent} when the service traces), and {@code X-Delayq-Signature} when the topic
 * has {@code http.signing-keys} (see {@link io.delayq.SignatureVerifier}).
 * A 2xx reply completes the job; an answer with {@code X-Delayq-Snooze} (seconds or an HTTP date)
 * snoozes it until then (the attempt not counted); a 429 or 503 with {@code Retry-After} (the
 * same syntax) snoozes it likewise and holds the whole topic until then, on every replica (at most
 * {@code http.max-retry-after} ahead); any other status (a 429 or 503 without a readable
 * {@code Retry-After} too), a connection error or the timeout fails the attempt (and the retry
 * policy applies), and a non-2xx answer with
 * {@code X-Delayq-Permanent: true} sends the job to the dead set at once. Lets services in any
 * language use delayq.
 *
 * <p>Each target has its own Vert.x HTTP client (on the event loops Quarkus runs), so its
 * connection limit is its own: keep-alive connections, HTTP/2 by ALPN on {@code https}, or
 * h2c with prior knowledge when configured. No thread waits for a call: the call is started
 * on the taker's thread and its answer settles the attempt on the event loop.
 */
public final class HttpTargetHandler implements JobHandler {
    private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(HttpTargetHandler.class);
    private static final CharSequence JOB_ID = HttpHeaders.createOptimized("X-Delayq-Job-Id");
    private static final CharSequence TOPIC = HttpHeaders.createOptimized("X-Delayq-Topic");
    private static final CharSequence ATTEMPT = HttpHeaders.createOptimized("X-Delayq-Attempt");
    private static final CharSequence TRACEPARENT = HttpHeaders.createOptimized("traceparent");
    private static final CharSequence SIGNATURE = HttpHeaders.createOptimized("X-Delayq-Signature");
    private static final CharSequence JSON = HttpHeaders.createOptimized("application/json");
    private static final Buffer NULL_BODY = Buffer.buffer("null");
    /** What a target answers when it is overloaded: "not now, and not before Retry-After". */
    private static final int TOO_MANY_REQUESTS = 429, UNAVAILABLE = 503;
    /** {@code http.max-retry-after} when it is not set (and the horizon is not shorter). */
    public static final Duration DEFAULT_MAX_RETRY_AFTER = Duration.ofHours(1);

    /** The target's URL as it may be shown ({@link TargetUrls#redact}). */
    private final String url;
    /** {@code Basic ...} from the URL's user info; null without. */
    private final String authorization;
    private final String host;
    private final int port;
    private final boolean ssl;
    private final String path;
    private final long timeoutMs;
    private final Vertx vertx;
    private final HttpClient client;
    /** The event loop this target's calls run on, and the calls queued for it. */
    private final Context context;
    private final Queue<Runnable> toStart = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean handOff = new AtomicBoolean();
    /** Signs each call when the topic has signing keys; used on {@link #context} only. Null: unsigned. */
    private final RequestSigner signer;
    /** The longest a 429/503's Retry-After holds the topic ({@code http.max-retry-after}). */
    private final Duration maxRetryAfter;
    /**
     * The most bytes of a 2xx body kept as the job's result (its topic's result-retention: the
     * payload limit); 0 = the body is read and dropped.
     */
    private int resultBytes;
    private static final com.fasterxml.jackson.databind.ObjectMapper BODIES = new com.fasterxml.jackson.databind.ObjectMapper();

    /**
     * @param maxConnections most connections to the target (HTTP/1.1 and HTTP/2 alike)
     * @param h2c HTTP/2 with prior knowledge on an {@code http://} URL
     * @param tls for an {@code https://} URL, the Quarkus TLS configuration to call it with; null: the JVM's trusted CAs
     */
    public HttpTargetHandler(Vertx vertx, String url, Duration timeout, int maxConnections, boolean h2c,
            TlsConfiguration tls) {
        this(vertx, url, timeout, maxConnections, h2c, tls, null, DEFAULT_MAX_RETRY_AFTER);
    }

    /**
     * As above; with a {@code signer}, every call carries {@code X-Delayq-Signature} (see
     * {@link io.delayq.SignatureVerifier}), made on the target's event loop, which alone uses it.
     *
     * @param maxRetryAfter the longest a 429 or 503's {@code Retry-After} holds the topic
     */
    public HttpTargetHandler(Vertx vertx, String url, Duration timeout, int maxConnections, boolean h2c,
            TlsConfiguration tls, RequestSigner signer, Duration maxRetryAfter) {
        this.signer = signer;
        if (maxRetryAfter.isNegative() || maxRetryAfter.isZero()) {
            throw new IllegalArgumentException("delayq.topics.*.http.max-retry-after must be positive, not " + maxRetryAfter);
        }
        this.maxRetryAfter = maxRetryAfter;
        URI uri = TargetUrls.parse("delayq.topics.*.http.url", url);
        if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
            throw new IllegalArgumentException("delayq.topics.*.http.url must be an http(s) URL: " + TargetUrls.redact(url));
        }
        if (maxConnections < 1) {
            throw new IllegalArgumentException("delayq.topics.*.http.max-connections must be at least 1, not " + maxConnections);
        }
        // Shown in every message, describe() and lastError: without user info or query values.
        this.url = TargetUrls.redact(url);
        this.authorization = TargetUrls.basicAuthorization(uri).orElse(null);
        this.vertx = vertx;
        this.ssl = "https".equals(uri.getScheme());
        this.host = uri.getHost();
        this.port = uri.getPort() > 0 ? uri.getPort() : ssl ? 443 : 80;
        String p = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        this.path = uri.getRawQuery() == null ? p : p + "?" + uri.getRawQuery();
        this.timeoutMs = Math.max(1, timeout.toMillis());
        int connectMs = (int) Math.min(Integer.MAX_VALUE, timeoutMs);
        HttpClientOptions options = new HttpClientOptions()
                .setConnectTimeout(connectMs)
                .setKeepAlive(true)
                // Below the idle timeout of common servers (Node: 5 s), so that a call is never sent
                // on a connection the target is closing at that moment.
                .setKeepAliveTimeout(4)
                .setPipelining(false)
                .setTcpNoDelay(true)
                .setSsl(ssl)
                .setVerifyHost(true)
                .setDecompressionSupported(false)
                // The call carries the attempt's own traceparent; no client span of Vert.x' tracer.
                .setTracingPolicy(TracingPolicy.IGNORE);
        if (ssl) {
            // HTTP/2 when the target offers it, HTTP/1.1 otherwise.
            options.setUseAlpn(true).setProtocolVersion(HttpVersion.HTTP_2)
                    .setAlpnVersions(List.of(HttpVersion.HTTP_2, HttpVersion.HTTP_1_1));
            trust(options, tls);
        } else if (h2c) {
            options.setProtocolVersion(HttpVersion.HTTP_2).setHttp2ClearTextUpgrade(false);
        } else {
            options.setProtocolVersion(HttpVersion.HTTP_1_1);
        }
        // An event loop of its own for the target (Vert.x assigns them round robin), not the
        // caller's: the constructor may run on an event loop that serves something else.
        this.context = ((VertxInternal) vertx).createEventLoopContext();
        this.client = vertx.createHttpClient(options,
                new PoolOptions().setHttp1MaxSize(maxConnections).setHttp2MaxSize(maxConnections));
    }

    /**
     * Keeps each 2xx answer's body as its job's result ({@link Job#result(Object)}): a JSON body
     * (Content-Type application/json or +json) as JSON, anything else as a string; a body longer
     * than {@code maxBytes} is kept cut, as a string ({@link Job#resultCut}). Called once, before
     * the first call (the topic has a result-retention).
     */
    public HttpTargetHandler keepingResults(int maxBytes) {
        this.resultBytes = maxBytes;
        return this;
    }

    /** Only starts the call: the taker's thread may run it, no thread of its own per job. */
    @Override
    public boolean blocking() {
        return false;
    }

    @Override
    public CompletionStage<Void> handle(Job job, AttemptContext context) {
        byte[] bytes = signer == null ? null
                : (job.payloadJson() == null ? "null" : job.payloadJson()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Buffer body = bytes != null ? Buffer.buffer(bytes)
                : job.payloadJson() == null ? NULL_BODY : Buffer.buffer(job.payloadJson());
        MultiMap headers = HttpHeaders.headers()
                .add(HttpHeaders.CONTENT_TYPE, JSON)
                .add(JOB_ID, job.id())
                .add(TOPIC, job.topic())
                .add(ATTEMPT, Integer.toString(job.attempt()));
        // The target's spans join the job's trace (W3C Trace Context).
        job.traceparent().ifPresent(t -> headers.add(TRACEPARENT, t));
        if (authorization != null) {
            headers.add(HttpHeaders.AUTHORIZATION, authorization);
        }
        // The job's own timeout (its enqueue's timeoutMs) in place of http.timeout.
        long callMs = job.timeoutMs().orElse(timeoutMs);
        long deadline = System.nanoTime() + callMs * 1_000_000;
        // The wait for a connection (a free one of the pool, or a new one) is bounded by the
        // timeout; the call on it by what is left of the timeout, by a timer on the event loop.
        RequestOptions request = new RequestOptions().setMethod(HttpMethod.POST).setHost(host).setPort(port)
                .setSsl(ssl).setURI(path).setHeaders(headers).setConnectTimeout(callMs);
        Call call = new Call(job, callMs);
        onLoop(() -> start(call, request, body, bytes, deadline));
        return call;
    }

    /**
     * Runs {@code task} on this target's event loop. Calls started from the taker's thread are
     * queued and handed over together (one wake-up of the event loop per take, not per job: the
     * wake-up is a system call and cost more than the rest of the call's start), and all of the
     * target's connections, timers and answers stay on that one loop: no hop between threads.
     */
    private void onLoop(Runnable task) {
        if (Vertx.currentContext() == context) {
            task.run();
            return;
        }
        toStart.add(task);
        if (handOff.compareAndSet(false, true)) {
            context.runOnContext(v -> {
                handOff.set(false); // before polling: a task queued from now on schedules another run
                for (Runnable t; (t = toStart.poll()) != null;) {
                    try {
                        t.run();
                    } catch (RuntimeException e) {
                        LOG.errorf(e, "HTTP target %s: a call could not start", url); // the others still do
                    }
                }
            });
        }
    }

    /** {@code signed}: the body's bytes to sign, null when the topic has no signing keys. */
    private void start(Call call, RequestOptions request, Buffer body, byte[] signed, long deadline) {
        if (call.isDone()) {
            return; // cancelled (the attempt's own timeout) before it started
        }
        try {
            client.request(request).onComplete(ar -> {
                if (ar.failed()) {
                    // No connection: the target did not get the call.
                    call.completeExceptionally(new HttpTargetException("HTTP target " + url + " not reached: " + ar.cause(), false));
                    return;
                }
                HttpClientRequest req = ar.result();
                call.request = req;
                if (call.isDone()) {
                    req.reset(); // cancelled (the attempt's own timeout) while it waited for a connection
                    return;
                }
                long leftMs = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                long timer = vertx.setTimer(leftMs, id -> {
                    if (call.completeExceptionally(new HttpTargetException(
                            "HTTP target " + url + " did not answer within " + call.timeoutMs + " ms", true, call.timeoutMs))) {
                        req.reset();
                    }
                });
                if (signed != null) {
                    // Signed on the loop once it has its connection, as it leaves: t is the time it is
                    // sent, not before a wait for a pool connection (a stale t), and the Macs are this loop's.
                    Job job = call.job;
                    req.putHeader(SIGNATURE, signer.sign(System.currentTimeMillis(), job.topic(), job.id(), job.attempt(), signed));
                }
                // The status and headers decide: a 2xx whose body then breaks off is still done.
                req.send(body).onComplete(sent -> {
                    vertx.cancelTimer(timer);
                    if (sent.failed()) {
                        // The connection broke before any answer: most often a kept-alive connection
                        // the target closed as the call went out, which it never ran. Retried at
                        // once, as a lost connection (only a timeout waits: the target may still run it).
                        call.completeExceptionally(new HttpTargetException("HTTP target " + url + ": " + sent.cause(), false));
                    } else if (resultBytes > 0 && sent.result().statusCode() / 100 == 2) {
                        keepBody(call, req, sent.result(), deadline);
                    } else {
                        sent.result().end(); // the body is read and dropped, so the connection is reused
                        call.answered(sent.result());
                    }
                });
            });
        } catch (RuntimeException e) {
            // The client could not even start the call (closed at shutdown, ...): it never left.
            call.completeExceptionally(new HttpTargetException("HTTP target " + url + " not called: " + e, false));
        }
    }

    /**
     * Reads a 2xx body, at most {@link #resultBytes} of it (the rest is read and dropped), into the
     * job's result, then settles the call. The status decided: the attempt is a success whatever
     * the body does next. A body that breaks off, or that is still coming when the call's timeout
     * is up (at least {@link #BODY_GRACE_MS} after the headers) or when the attempt ends (its
     * timeout: see {@link Call#cancel}), settles it as a success with what came of it, flagged cut,
     * and the connection is reset: never a timeout, whose retry would run the target again.
     */
    private void keepBody(Call call, HttpClientRequest req, HttpClientResponse response, long deadline) {
        Body body = new Body(call, req, response);
        call.body = body;
        response.handler(body::append);
        response.exceptionHandler(e -> body.end(true));
        response.endHandler(v -> body.end(false));
        long leftMs = Math.max(BODY_GRACE_MS, (deadline - System.nanoTime()) / 1_000_000);
        body.timer = vertx.setTimer(leftMs, id -> body.end(true));
    }

    /** The least time a 2xx body is given after its headers (the rest of the call's timeout else). */
    private static final long BODY_GRACE_MS = 1000;

    /**
     * A 2xx body being read: appended on the event loop, ended once (its end, a break, its timer,
     * or the attempt's end on another thread), under its own lock.
     */
    private final class Body {
        private final Call call;
        private final HttpClientRequest req;
        private final HttpClientResponse response;
        private final Buffer got = Buffer.buffer();
        private boolean over;
        private boolean ended;
        volatile long timer = -1;

        Body(Call call, HttpClientRequest req, HttpClientResponse response) {
            this.call = call;
            this.req = req;
            this.response = response;
        }

        synchronized void append(Buffer chunk) {
            if (ended) {
                return;
            }
            int room = resultBytes - got.length();
            if (chunk.length() <= room) {
                got.appendBuffer(chunk);
            } else {
                if (room > 0) {
                    got.appendBuffer(chunk, 0, room);
                }
                over = true;
            }
        }

        /**
         * Settles the call as answered with what came of the body, {@code cut} when it did not
         * end (the connection is then reset: the rest is not waited for). False when it had ended.
         */
        boolean end(boolean cut) {
            synchronized (this) {
                if (ended) {
                    return false;
                }
                ended = true;
                keepResult(call.job, response.getHeader(HttpHeaders.CONTENT_TYPE), got, over || cut);
            }
            if (timer >= 0) {
                vertx.cancelTimer(timer);
            }
            call.answered(response);
            if (cut) {
                req.reset();
            }
            return true;
        }
    }

    private static void keepResult(Job job, String contentType, Buffer body, boolean cut) {
        if (body.length() == 0 && !cut) {
            return; // no body, no result
        }
        String text = body.toString(java.nio.charset.StandardCharsets.UTF_8);
        if (cut) {
            job.resultBody(text, true);
            return;
        }
        String type = contentType == null ? "" : contentType.toLowerCase(java.util.Locale.ROOT);
        int semi = type.indexOf(';');
        type = (semi < 0 ? type : type.substring(0, semi)).trim();
        if (type.equals("application/json") || type.endsWith("+json")) {
            String json = compactJson(text);
            if (json != null) {
                job.result(new com.fasterxml.jackson.databind.util.RawValue(json));
                return;
            }
            // not one JSON value after all: kept as the text it is
        }
        job.resultBody(text, false);
    }

    /**
     * A body that is exactly one JSON value, without its whitespace, every number as its text was
     * sent ({@code 1e5}, {@code 12.50} and a 30-digit integer stay as they are: a tree read and written
     * again would make {@code 100000.0} and {@code 12.5} of the first two); null when it is not one
     * JSON value (broken, empty, or two values).
     */
    static String compactJson(String text) {
        com.fasterxml.jackson.core.JsonFactory f = BODIES.getFactory();
        java.io.StringWriter out = new java.io.StringWriter(text.length());
        try (com.fasterxml.jackson.core.JsonParser p = f.createParser(text);
                com.fasterxml.jackson.core.JsonGenerator g = f.createGenerator(out)) {
            if (p.nextToken() == null) {
                return null;
            }
            int depth = 0;
            do {
                com.fasterxml.jackson.core.JsonToken t = p.currentToken();
                if (t == com.fasterxml.jackson.core.JsonToken.VALUE_NUMBER_INT
                        || t == com.fasterxml.jackson.core.JsonToken.VALUE_NUMBER_FLOAT) {
                    g.writeNumber(p.getText());
                } else {
                    g.copyCurrentEvent(p);
                }
                depth += t.isStructStart() ? 1 : t.isStructEnd() ? -1 : 0;
            } while (depth > 0 && p.nextToken() != null);
            if (depth != 0 || p.nextToken() != null) {
                return null;
            }
            g.flush();
            return out.toString();
        } catch (java.io.IOException e) {
            return null;
        }
    }

    /** One call's outcome; cancelling it (the attempt's timeout) aborts the call. */
    private final class Call extends CompletableFuture<Void> {
        private final Job job;
        /** The call's timeout: the job's own, else http.timeout. */
        private final long timeoutMs;
        volatile HttpClientRequest request;
        /** The 2xx body being kept ({@link #keepBody}); null before, or when none is kept. */
        volatile Body body;

        Call(Job job, long timeoutMs) {
            this.job = job;
            this.timeoutMs = timeoutMs;
        }

        /**
         * Aborts the call; but a call whose 2xx answer came and whose body is being kept completes
         * instead, as a success with the body read so far, flagged cut: the status decided (the
         * runner then settles the attempt with that outcome, not as timed out).
         */
        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            Body b = body;
            if (b != null && b.end(true)) {
                return false;
            }
            boolean cancelled = super.cancel(mayInterruptIfRunning);
            HttpClientRequest r = request;
            if (cancelled && r != null) {
                r.reset();
            }
            return cancelled;
        }

        void answered(HttpClientResponse response) {
            try {
                check(job, response);
                complete(null);
            } catch (RuntimeException e) {
                completeExceptionally(e);
            }
        }
    }

    private void check(Job job, HttpClientResponse response) {
        int status = response.statusCode();
        // Only a header of delayq's own snoozes: 202 + Retry-After is also what an API answers
        // for "accepted, poll later", which must stay a completed job (2xx = done).
        String snoozeFor = response.getHeader("X-Delayq-Snooze");
        if (snoozeFor != null) {
            snooze(job, snoozeFor.trim());
        }
        if (status / 100 != 2 && "true".equalsIgnoreCase(response.getHeader("X-Delayq-Permanent"))) {
            // Only the target's own code sends this header. A status alone (400, 404, 422) is also
            // what a proxy, an ingress or a framework answers for a wrong path or a mid-rollout
            // config: permanent by status would bury every job until that is fixed.
            throw new PermanentJobFailureException("HTTP target " + url + " answered " + status
                    + " with X-Delayq-Permanent: true");
        }
        if (status == TOO_MANY_REQUESTS || status == UNAVAILABLE) {
            throttle(status, response.getHeader(HttpHeaders.RETRY_AFTER));
        }
        if (status / 100 != 2) {
            throw new HttpTargetException("HTTP target " + url + " answered " + status, false);
        }
    }

    /**
     * A 429 or 503 with a readable {@code Retry-After}: the target is overloaded as a whole, so the
     * topic is held (see {@link TopicThrottledException}), no later than {@link #maxRetryAfter}
     * from now. Without one (or with one that reads as neither seconds nor a date) it returns,
     * and the answer is an ordinary failure: a proxy's 503 for a target being deployed says
     * nothing of when to come back, and holding the topic on a guess would hide it.
     */
    private void throttle(int status, String retryAfter) {
        if (retryAfter == null) {
            return;
        }
        When asked = When.parse(retryAfter.trim());
        if (asked == null) {
            return;
        }
        When held = asked.cappedAt(maxRetryAfter, Instant.now());
        throw new TopicThrottledException("HTTP target " + url + " answered " + status + " with Retry-After: "
                + retryAfter.trim() + (held.equals(asked) ? "" : " (held for the most, " + maxRetryAfter + ")"),
                held.delay(), held.until());
    }

    /**
     * A time to call again, as {@code Retry-After} (RFC 9110) and {@code X-Delayq-Snooze} give it:
     * delay-seconds or an HTTP date; exactly one of the two is set.
     */
    record When(Duration delay, Instant until) {
        /** {@code value} as delay-seconds or an IMF-fixdate (RFC 1123); null when it is neither. */
        static When parse(String value) {
            if (!value.isEmpty() && value.chars().allMatch(Character::isDigit)) {
                return new When(Duration.ofSeconds(value.length() > 12 ? Long.MAX_VALUE / 1000 : Long.parseLong(value)), null);
            }
            try {
                return new When(null, Instant.from(ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME)));
            } catch (DateTimeParseException e) {
                return null;
            }
        }

        /**
         * No further ahead than {@code max}: a longer delay becomes {@code max}, a date past
         * {@code now + max} becomes that (this host's clock: a cap, where a skew of a few
         * seconds does not matter).
         */
        When cappedAt(Duration max, Instant now) {
            if (delay != null) {
                return delay.compareTo(max) > 0 ? new When(max, null) : this;
            }
            Instant latest = now.plus(max);
            return until.isAfter(latest) ? new When(null, latest) : this;
        }
    }

    /**
     * "Not done yet, call again then": {@code X-Delayq-Snooze} is delay-seconds or an HTTP date,
     * as {@code Retry-After} (RFC 9110).
     */
    private void snooze(Job job, String when) {
        When w = When.parse(when);
        if (w == null) {
            // The target meant to be called again, but not when: a failed attempt shows why.
            throw new HttpTargetException("HTTP target " + url + " answered with an unreadable X-Delayq-Snooze: " + when,
                    false);
        }
        if (w.delay() != null) {
            job.snooze(w.delay());
        }
        job.snoozeUntil(w.until());
    }

    /**
     * A call that timed out may still be running at the target: the retry waits at least the
     * timeout again, so that it does not overlap a first call that takes up to twice the timeout
     * (a target that answers, late, within the time it was given does not see two calls at once).
     * A call that never got a connection did not reach the target: no wait.
     */
    @Override
    public long minRetryDelayMs(Throwable error) {
        for (Throwable e = error; e != null; e = e.getCause()) {
            if (e instanceof HttpTargetException h) {
                return h.mayStillRun ? (h.timeoutMs > 0 ? h.timeoutMs : timeoutMs) : 0;
            }
            if (e instanceof JobRunner.AttemptTimeoutException) {
                return timeoutMs;
            }
        }
        return 0;
    }

    @Override
    public String describe() {
        // Whether calls are signed, and with how many keys (a rotation shows as 2), never the keys.
        return "HTTP target " + url + (signer == null ? "" : ", signed with " + signer.keys() + " key(s)");
    }

    /**
     * What a Quarkus TLS configuration gives a client: its trust store, a client certificate
     * (mTLS), trust-all and hostname verification. Null leaves the JVM's trusted CAs.
     */
    static void trust(HttpClientOptions options, TlsConfiguration tls) {
        if (tls == null) {
            return;
        }
        if (tls.getTrustStoreOptions() != null) {
            options.setTrustOptions(tls.getTrustStoreOptions());
        }
        if (tls.getKeyStoreOptions() != null) {
            options.setKeyCertOptions(tls.getKeyStoreOptions()); // a client certificate (mTLS)
        }
        options.setTrustAll(tls.isTrustAll())
                .setVerifyHost(!"NONE".equalsIgnoreCase(tls.getHostnameVerificationAlgorithm().orElse("HTTPS")));
    }

    /** A non-2xx answer of the target, no answer in time, or no connection. */
    public static final class HttpTargetException extends RuntimeException implements io.delayq.core.SelfDescribingFailure {
        private static final long serialVersionUID = 1L;
        private final boolean mayStillRun;
        /** The call's timeout when it got no answer within it, else 0. */
        private final long timeoutMs;

        HttpTargetException(String message, boolean mayStillRun) {
            this(message, mayStillRun, 0);
        }

        HttpTargetException(String message, boolean mayStillRun, long timeoutMs) {
            super(message, null, false, false);
            this.mayStillRun = mayStillRun;
            this.timeoutMs = timeoutMs;
        }

        /** True when the call got no answer within its timeout. */
        public boolean timedOut() {
            return timeoutMs > 0;
        }

        /**
         * True when the call was sent (at least in part) and got no answer, in time or at all: it may
         * still run at the target, so a retry waits the timeout.
         */
        public boolean mayStillRun() {
            return mayStillRun;
        }
    }
}
