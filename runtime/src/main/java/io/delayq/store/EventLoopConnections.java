package io.delayq.store;

import java.util.concurrent.atomic.AtomicReference;

import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;

import io.quarkus.redis.client.RedisOptionsCustomizer;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * One Redis connection per event loop, opened on that event loop and used only from it, for the
 * commands an event loop sends (the REST enqueue, {@code ReactiveJobs}): the reply then comes back
 * on the thread that sent the command. Through the shared pool the connection mostly lives on
 * another event loop, and each command costs two hand-overs between threads (the write there, the
 * reply back), each a selector wake-up: a quarter of the event loops' time at a few thousand
 * single-job enqueues a second. The commands of one event loop are pipelined on its connection.
 * <p>
 * Only for commands that never block Redis (scripts, SADD): a WAIT (durable enqueue) would hold
 * every command behind it, so it keeps to the pool. While a connection is being opened, after one
 * failed to open (for a second), or with {@value #MAX_IN_FLIGHT} commands already waiting on it,
 * {@link #send} answers null and the caller uses the pool: nothing waits here.
 * <p>
 * The connections come from a client of their own, with the options Quarkus built for the default
 * Redis client (hosts, password, TLS, client type), captured as a {@link RedisOptionsCustomizer}
 * (which changes nothing): a connection taken from the shared pool may have been opened on any
 * event loop, one opened by a client whose pool is empty is opened on the caller's.
 */
@ApplicationScoped
public class EventLoopConnections implements RedisOptionsCustomizer {
    /** Commands waiting on one connection beyond which the pool takes the next: far below the client's queue (2048). */
    static final int MAX_IN_FLIGHT = 256;
    private static final long RETRY_MS = 1000;
    /** The name Quarkus gives the default Redis client (the one delayq injects). */
    private static final String DEFAULT_CLIENT = "<default>";
    private final AtomicReference<RedisOptions> options = new AtomicReference<>();
    private final ThreadLocal<Slot> slots = ThreadLocal.withInitial(Slot::new);
    private volatile Redis client;
    private volatile boolean closed;

    /** None at all: every command through the pool (a gateway built by hand, outside CDI). */
    static EventLoopConnections none() {
        EventLoopConnections none = new EventLoopConnections();
        none.closed = true;
        return none;
    }

    /** An event loop's connection and what is pending on it; touched only by that event loop's thread. */
    private static final class Slot {
        RedisConnection connection;
        boolean connecting;
        long failedAt;
        int inFlight;
    }

    @Override
    public void customize(String clientName, RedisOptions built) {
        if (DEFAULT_CLIENT.equals(clientName)) {
            options.set(new RedisOptions(built));
        }
    }

    /**
     * Sends on this event loop's connection; null when the caller is not on an event loop or the
     * connection is not there (or busy): then the caller sends through the pool.
     */
    Future<Response> send(Request request) {
        if (closed || !Context.isOnEventLoopThread()) {
            return null;
        }
        Slot slot = slots.get();
        RedisConnection c = slot.connection;
        if (c == null) {
            open(slot);
            return null;
        }
        if (slot.inFlight >= MAX_IN_FLIGHT) {
            return null;
        }
        slot.inFlight++;
        return c.send(request).andThen(done -> slot.inFlight--);
    }

    private void open(Slot slot) {
        if (slot.connecting || System.currentTimeMillis() - slot.failedAt < RETRY_MS) {
            return;
        }
        Redis redis = client();
        if (redis == null) {
            return;
        }
        slot.connecting = true;
        redis.connect().onComplete(done -> {
            slot.connecting = false;
            if (done.failed()) {
                slot.failedAt = System.currentTimeMillis();
                return;
            }
            RedisConnection c = done.result();
            if (closed) {
                c.close();
                return;
            }
            // A broken connection is forgotten; its pending commands fail as lost connections do
            // through the pool (503), and the next command opens another.
            c.exceptionHandler(e -> forget(slot, c));
            c.endHandler(v -> forget(slot, c));
            slot.connection = c;
            slot.inFlight = 0;
        });
    }

    private static void forget(Slot slot, RedisConnection c) {
        if (slot.connection == c) {
            slot.connection = null;
            slot.failedAt = System.currentTimeMillis();
            c.close();
        }
    }

    private Redis client() {
        Redis c = client;
        if (c == null) {
            RedisOptions o = options.get();
            if (o == null) {
                return null; // no default client configured as Quarkus does it: the pool only
            }
            synchronized (this) {
                if (client == null) {
                    // never more than one connection per event loop (plus one opening): the pool's
                    // own limits do not apply to connections that are never given back
                    // (the Vert.x instance of the calling event loop: a customizer is built before
                    // the Vertx bean may be injected)
                    client = Redis.createClient(Vertx.currentContext().owner(), new RedisOptions(o).setMaxPoolSize(
                            Math.max(o.getMaxPoolSize(), 4 * Runtime.getRuntime().availableProcessors() + 2)));
                }
                c = client;
            }
        }
        return c;
    }

    /** Closes the connections (at shutdown, after the last command). */
    @PreDestroy
    void close() {
        closed = true;
        Redis c = client;
        if (c != null) {
            c.close();
        }
    }
}
