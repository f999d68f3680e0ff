package io.delayq.store;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;

import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;

import io.quarkus.redis.client.RedisOptionsCustomizer;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.impl.ContextInternal;
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
 * Each event loop's connection comes from a client of its own, created on that event loop's own
 * (not a request's duplicated) context: a Vert.x Redis client binds every connection it opens to
 * the context it was created on, so one client shared by the event loops would put all their
 * connections on the first one. The clients use the options Quarkus built for the default Redis
 * client (hosts, password, TLS, client type), captured as a {@link RedisOptionsCustomizer} (which
 * changes nothing).
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
    /** Every event loop's client, to close them at shutdown. */
    private final Queue<Redis> clients = new ConcurrentLinkedQueue<>();
    private volatile boolean closed;

    /** None at all: every command through the pool (a gateway built by hand, outside CDI). */
    static EventLoopConnections none() {
        EventLoopConnections none = new EventLoopConnections();
        none.closed = true;
        return none;
    }

    /** An event loop's connection and what is pending on it; touched only by that event loop's thread. */
    private static final class Slot {
        Redis client;
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

    /** The options Quarkus built for the default Redis client, null before it was built. */
    RedisOptions options() {
        RedisOptions o = options.get();
        return o == null ? null : new RedisOptions(o);
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
        return c.send(request).andThen(done -> {
            if (slot.connection == c) {
                slot.inFlight--; // a broken connection's late failures do not count against its successor
            }
        });
    }

    private void open(Slot slot) {
        if (slot.connecting || System.currentTimeMillis() - slot.failedAt < RETRY_MS) {
            return;
        }
        RedisOptions o = options.get();
        if (o == null) {
            return; // no default client configured as Quarkus does it: the pool only
        }
        slot.connecting = true;
        // On the event loop's own context: the client binds its connections, and so their
        // handlers, to the context it is created on (a request's context would also stay
        // referenced by it for good).
        ContextInternal loop = ((ContextInternal) io.vertx.core.Vertx.currentContext()).unwrap();
        loop.runOnContext(v -> {
            if (slot.client == null) {
                // One connection, never given back: the pool's limits do not apply to it.
                slot.client = Redis.createClient(loop.owner(), new RedisOptions(o).setMaxPoolSize(2));
                clients.add(slot.client);
            }
            slot.client.connect().onComplete(done -> {
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
                c.endHandler(x -> forget(slot, c));
                slot.connection = c;
                slot.inFlight = 0;
            });
        });
    }

    private static void forget(Slot slot, RedisConnection c) {
        if (slot.connection == c) {
            slot.connection = null;
            slot.failedAt = System.currentTimeMillis();
            c.close();
        }
    }

    /** Closes the connections (at shutdown, after the last command). */
    @PreDestroy
    void close() {
        closed = true;
        clients.forEach(Redis::close);
    }
}
