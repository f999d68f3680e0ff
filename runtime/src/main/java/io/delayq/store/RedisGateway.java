package io.delayq.store;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.concurrent.TimeoutException;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import io.delayq.core.DelayqConfig;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.impl.types.ErrorType;

/**
 * The one door to Redis: every call has a timeout, and comes in two forms — a Vert.x future
 * ({@code *Async}: holds no thread, for reactive callers) and a blocking one (the same future,
 * awaited: for callers on worker or virtual threads, never the event loop). Redis error replies
 * become {@link RedisReplyException}; everything that means "Redis is not there right now"
 * becomes {@link StoreUnavailableException}.
 */
@ApplicationScoped
public class RedisGateway {
    // Replies that mean "not now" rather than "wrong request" (CONNECTION_CLOSED: the client's own,
    // for a request whose connection closed before its reply).
    // MISCONF: writes refused until a snapshot (or the AOF) can be written again; an operator's
    // fix, but nothing is wrong with the request and a retry succeeds once it is made.
    private static final java.util.Set<String> TRANSIENT = java.util.Set.of("LOADING", "BUSY", "MASTERDOWN", "READONLY",
            "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS", "OOM", "MISCONF", "CONNECTION_CLOSED",
            // A redirect the cluster client did not follow (inside a batch): its slot map is
            // stale and refreshes within a second.
            "MOVED", "ASK");
    // Redis refuses a new connection beyond maxclients with this reply (code ERR, so by its text):
    // connections free up as clients leave.
    private static final String MAX_CLIENTS = "ERR max number of clients reached";
    // A batch whose connection died fails with the text of the exception (a Java class name), one
    // line per request.
    private static final java.util.regex.Pattern EXCEPTION_TEXT = java.util.regex.Pattern
            .compile("[a-z][a-z0-9_]*(\\.[A-Za-z0-9_$]+)+(: .*)?");
    private final Redis redis;
    private final EventLoopConnections loops;
    /** On a Redis Cluster, a client per master for commands of one slot; null otherwise. */
    private final RedisNodes nodes;
    private final long timeoutMs;
    private final boolean cluster;
    private final Counter unavailable;
    private final Counter errorReplies;
    private volatile boolean answering = true;
    private volatile String credentialsRefused;
    /** When the last WARN of refused credentials was logged (nanoTime); 0: never. */
    private final java.util.concurrent.atomic.AtomicLong credentialsWarned = new java.util.concurrent.atomic.AtomicLong();
    private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(RedisGateway.class);
    private static final long FULL_WARN_EVERY_MS = 60_000;
    /** How long a sign that Redis is full holds (see {@link #isFull()}). */
    private static final long FULL_FOR_MS = 90_000;
    private volatile long fullSeenAt = Long.MIN_VALUE / 2;
    private volatile long fullWarnedAt = Long.MIN_VALUE / 2;

    /** A gateway that sends every command through the pool (tests build one by hand). */
    public RedisGateway(Redis redis, DelayqConfig config, MeterRegistry registry) {
        this(redis, EventLoopConnections.none(), null, config, registry);
    }

    @jakarta.inject.Inject
    public RedisGateway(Redis redis, EventLoopConnections loops, RedisNodes nodes, DelayqConfig config,
            MeterRegistry registry) {
        this.redis = redis;
        this.loops = loops;
        this.timeoutMs = config.redisTimeout().toMillis();
        this.cluster = "cluster".equalsIgnoreCase(org.eclipse.microprofile.config.ConfigProvider.getConfig()
                .getOptionalValue("quarkus.redis.client-type", String.class).orElse("standalone"));
        this.nodes = cluster ? nodes : null;
        this.unavailable = Counter.builder("delayq.redis.errors").description("Redis calls that failed, by kind")
                .tag("kind", "unavailable").register(registry);
        this.errorReplies = Counter.builder("delayq.redis.errors").description("Redis calls that failed, by kind")
                .tag("kind", "reply").register(registry);
    }

    /**
     * Whether Redis is a Redis Cluster ({@code quarkus.redis.client-type=cluster}): a command or
     * batch must then keep to one node, and wake-ups use sharded pub/sub.
     */
    public boolean cluster() {
        return cluster;
    }

    /**
     * Why Redis refuses delayq's credentials, from a call that was refused so until one succeeds
     * again; empty while it does not (the readiness check reads it).
     */
    public java.util.Optional<String> credentialsRefused() {
        return java.util.Optional.ofNullable(credentialsRefused);
    }

    /** A WARN at most once a minute: every loop of the replica meets the same refusal. */
    private void credentialsRefused(RedisCredentialsException e) {
        credentialsRefused = e.getMessage();
        long now = System.nanoTime();
        long last = credentialsWarned.get();
        if ((last == 0 || now - last > 60_000_000_000L) && credentialsWarned.compareAndSet(last, now == 0 ? 1 : now)) {
            LOG.warn(e.getMessage());
        }
    }

    /**
     * Notes that Redis refused a write because it is full (an OOM reply, or the memory reading):
     * what only adds (history, dead-job callbacks, results) is skipped for 90 s, and the replica says
     * so at WARN, at most once a minute.
     */
    public void full() {
        long now = System.currentTimeMillis();
        fullSeenAt = now;
        if (now - fullWarnedAt >= FULL_WARN_EVERY_MS) {
            fullWarnedAt = now;
            LOG.warnf("Redis is full (used memory reached maxmemory under noeviction): enqueues answer 503 until memory"
                    + " is freed; jobs already held still run and are acked, history and dead-job callbacks are skipped."
                    + " Free memory (purge dead jobs, lower delayq.dead.max-jobs) or raise maxmemory (see"
                    + " docs/operations.md, DelayqRedisMemoryHigh)");
        }
    }

    /**
     * Whether Redis was found full within the last 90 s (see {@link #full()}): longer than the
     * memory reading's period (60 s), so that the flag does not lapse between two readings that
     * both find it full.
     */
    public boolean isFull() {
        return System.currentTimeMillis() - fullSeenAt < FULL_FOR_MS;
    }

    /** False from a call that found Redis unreachable (or not ready) until one succeeds again. */
    public boolean answering() {
        return answering;
    }

    public Response send(Request request) {
        return await(sendAsync(request));
    }

    /**
     * As {@link #send(Request)}; when the reply comes only after this call gave up waiting,
     * {@code late} gets it (on a Redis client thread: it must not block), so that what the
     * command did is not left with nobody knowing.
     */
    public Response send(Request request, Consumer<Response> late) {
        return await(sendAsync(request, late));
    }

    /**
     * Sends without holding a thread: the future fails as {@link #send(Request)} throws
     * ({@link StoreUnavailableException} after the timeout or without Redis, {@link RedisReplyException}
     * for an error reply). Its callbacks run on a Redis client (event loop) thread.
     */
    public Future<Response> sendAsync(Request request) {
        return settle(send0(request), timeoutMs);
    }

    /** As {@link #sendAsync(Request)}, with {@link #send(Request, Consumer)}'s {@code late}. */
    public Future<Response> sendAsync(Request request, Consumer<Response> late) {
        Future<Response> reply = send0(request);
        return settle(reply, timeoutMs).onFailure(e -> {
            if (e instanceof StoreUnavailableException) {
                reply.onSuccess(late::accept);
            }
        });
    }

    /**
     * One command that does not block Redis: on an event loop, on that event loop's own connection
     * ({@link EventLoopConnections}: no hand-over to another thread and back), else through the pool.
     */
    private Future<Response> send0(Request request) {
        // On a cluster, straight to the slot's master: through the cluster client's pool a request
        // keeps a connection to every node until its reply, so a few waiting for a hung master
        // would leave none for the requests to the healthy ones (see RedisNodes); an event loop's
        // own connection is a cluster connection too.
        Future<Response> direct = nodes != null ? nodes.send(request, timeoutMs, redis::send) : null;
        if (direct != null) {
            return direct;
        }
        Future<Response> own = loops.send(request);
        return own != null ? own : redis.send(request);
    }

    /** Pipelined requests on one connection: one round trip. */
    public List<Response> batch(List<Request> requests) {
        return await(settle(redis.batch(requests), timeoutMs));
    }

    /** A batch whose last request may block Redis for up to {@code blockMs} (WAIT): so much longer a timeout. */
    Future<List<Response>> batchAsync(List<Request> requests, long blockMs) {
        return settle(redis.batch(requests), timeoutMs + blockMs);
    }

    /**
     * Sends requests that may live on different Redis Cluster nodes, all at once, and waits for
     * every reply (in order): one round trip's latency, without the one-node rule of a batch.
     */
    public List<Response> sendEach(List<Request> requests) {
        List<Future<Response>> sent = new java.util.ArrayList<>(requests.size());
        for (Request r : requests) {
            sent.add(send0(r));
        }
        await(settle(Future.all(sent), timeoutMs));
        List<Response> out = new java.util.ArrayList<>(sent.size());
        for (Future<Response> f : sent) {
            out.add(f.result());
        }
        return out;
    }

    /** Counts a failure found by a caller (a WAIT that fell short) as Redis being unavailable. */
    StoreUnavailableException unavailable(StoreUnavailableException e) {
        unavailable.increment();
        return e;
    }

    /** A dedicated connection (pub/sub); the caller closes it. */
    public RedisConnection connect() {
        return await(settle(redis.connect(), timeoutMs));
    }

    /**
     * A reply as callers see it: within {@code timeoutMs}, failures translated and counted. Every
     * future of this gateway is settled so, hence ends by itself; {@link #await} adds no timeout.
     */
    private <T> Future<T> settle(Future<T> reply, long timeoutMs) {
        return reply.timeout(timeoutMs, TimeUnit.MILLISECONDS).transform(done -> {
            if (done.succeeded()) {
                answering = true;
                credentialsRefused = null;
                return Future.succeededFuture(done.result());
            }
            Throwable cause = done.cause();
            return Future.failedFuture(counted(cause instanceof TimeoutException
                    ? new StoreUnavailableException("Redis did not answer within " + timeoutMs + " ms", cause)
                    : translate(cause)));
        });
    }

    /**
     * Waits for a future of this store (one settled here, or built of such): the blocking API.
     * Never on an event loop: the reply may need the very thread that would wait for it, and a
     * blocked event loop stalls every connection on it. A reactive caller uses the futures.
     */
    public <T> T await(Future<T> future) {
        if (Context.isOnEventLoopThread()) {
            throw new IllegalStateException("a blocking Redis call on event loop thread " + Thread.currentThread().getName()
                    + ": use the non-blocking API (ReactiveJobs) there, or run the caller on a worker thread");
        }
        try {
            return future.toCompletionStage().toCompletableFuture().get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException("interrupted while waiting for Redis", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new StoreUnavailableException("Redis call failed: " + cause, cause);
        }
    }

    private RuntimeException counted(RuntimeException e) {
        if (e instanceof RedisCredentialsException refused) {
            credentialsRefused(refused);
        }
        if (e instanceof RedisFullException) {
            // Redis answers: only what adds to it is refused.
            answering = true;
            unavailable.increment();
            full();
        } else if (e instanceof StoreUnavailableException) {
            answering = false;
            unavailable.increment();
        } else if (!isProtocol(e.getMessage())) {
            answering = true;
            errorReplies.increment();
        } else {
            answering = true;
        }
        return e;
    }

    /** Replies that are part of the protocol with the scripts, not errors: a missing day shard, a script to load. */
    private static boolean isProtocol(String message) {
        return message != null && (message.contains("DQNEEDDAY") || message.startsWith("NOSCRIPT"));
    }

    static RuntimeException translate(Throwable cause) {
        if (cause instanceof ErrorType error) {
            String message = String.valueOf(error.getMessage());
            boolean first = true;
            if (message.startsWith("ERR [")) {
                // A failed batch: "ERR [<index>] <the reply>"; classify the reply. Only a refusal
                // of the first request (the script of a [script, WAIT] batch) means nothing ran.
                first = message.startsWith("ERR [0]");
                message = message.substring(message.indexOf(']') + 1).trim();
            }
            // The error code is the reply's first word (BUSYKEY is a wrong request, BUSY is not now).
            String code = message.split("\\s", 2)[0];
            if (code.equals("WRONGPASS") || code.equals("NOAUTH") || message.startsWith("ERR invalid password")
                    || message.startsWith("ERR AUTH") || message.startsWith("ERR Client sent AUTH")
                    // What Redis answers a connection that never authenticated and sends a large
                    // command (a script's EVALSHA) before any NOAUTH could be seen.
                    || message.startsWith("ERR Protocol error: unauthenticated")) {
                return new RedisCredentialsException(message, error);
            }
            if (code.equals("OOM")) {
                return new RedisFullException("Redis is full (maxmemory reached, noeviction): " + message, error, first);
            }
            if (TRANSIENT.contains(code) || message.startsWith(MAX_CLIENTS)) {
                // Redis' own refusal: the command (a whole script) did not run. CONNECTION_CLOSED is
                // the client's: the request may have been sent and run.
                return new StoreUnavailableException("Redis is not ready: " + message, error,
                        first && !code.equals("CONNECTION_CLOSED"));
            }
            // The connection was lost under the request (Redis killed, failed over, restarted):
            // the client fails it with CONNECTION_CLOSED, or in a batch with the exception's text.
            if (EXCEPTION_TEXT.matcher(message.split("\\R", 2)[0]).matches()) {
                return new StoreUnavailableException("Redis is unreachable: " + message, error);
            }
            return new RedisReplyException(message, error);
        }
        // No connection (refused, unresolved host): nothing was sent.
        return new StoreUnavailableException("Redis is unreachable: " + cause, cause,
                cause instanceof java.net.ConnectException || cause instanceof java.net.UnknownHostException);
    }
}
