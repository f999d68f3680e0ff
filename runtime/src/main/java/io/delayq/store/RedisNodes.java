package io.delayq.store;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;

import io.quarkus.redis.client.RedisOptionsCustomizer;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.ProtocolVersion;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * Connections to single nodes of a Redis Cluster, for what must not depend on the whole cluster.
 * The Vert.x cluster client opens a connection only once it has one to every node, and a request
 * sent through its pool keeps that whole connection (one pooled connection to every node) until
 * its reply: so one node that hangs (a lost host, a frozen redis-server) holds up the wake-up
 * subscription of every node, and a handful of requests waiting for it empty the pool for all of
 * them. Each node gets clients of its own ({@code STANDALONE}, on the options Quarkus built for the
 * default client: password, TLS) with a pool of its own; the slot map is read from whichever node
 * answers first ({@link #slotMap}) and kept here by whoever reads it (the wake-ups, see
 * {@link #slots(String[])}): until then, and for anything that is not a one-slot command,
 * {@link #send} declines and the cluster client is used as before.
 */
@ApplicationScoped
public class RedisNodes implements RedisOptionsCustomizer {
    static final int SLOTS = 16_384;
    /** The name Quarkus gives the default Redis client (the one delayq injects). */
    private static final String DEFAULT_CLIENT = "<default>";
    /** Looked up when first needed: Quarkus asks customizers before the Vertx bean exists. */
    private final java.util.function.Supplier<Vertx> vertx;
    private final AtomicReference<RedisOptions> options = new AtomicReference<>();
    private final Map<String, Redis> clients = new ConcurrentHashMap<>();
    private final Map<String, Redis> commandClients = new ConcurrentHashMap<>();
    private volatile boolean closed;
    /** Slot → master endpoint, as last read; null until then. */
    private volatile String[] owners;
    /** Told when a reply says the slot map is stale (MOVED, ASK): reads it again. */
    private volatile Runnable onStale = () -> readOwnMap(5_000);
    /** Whether the wake-ups keep the slot map ({@link #slots}); else this reads it itself. */
    private volatile boolean kept;
    private final java.util.concurrent.atomic.AtomicBoolean reading = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile long readAtNanos = System.nanoTime() - TimeUnit.SECONDS.toNanos(10);

    @jakarta.inject.Inject
    public RedisNodes(Instance<Vertx> vertx) {
        this.vertx = vertx::get;
    }

    /** Nodes reached with {@code options} (tests build one by hand; the application's are Quarkus'). */
    public RedisNodes(Vertx vertx, RedisOptions options) {
        this.vertx = () -> vertx;
        this.options.set(new RedisOptions(options));
    }

    @Override
    public void customize(String clientName, RedisOptions built) {
        if (DEFAULT_CLIENT.equals(clientName)) {
            options.set(new RedisOptions(built));
        }
    }

    /** Whether the default client's options are known (Quarkus built it): else nothing here works. */
    public boolean available() {
        return options.get() != null && !closed;
    }

    /** The slot map read last (slot → master endpoint), and who reads it again when it is found stale. */
    public void slots(String[] map, Runnable readAgain) {
        this.kept = true;
        this.owners = map;
        this.onStale = readAgain;
    }

    /**
     * Reads the slot map itself, when no wake-ups keep it (a replica that serves no topic, a
     * producer, still enqueues to every master): at most one read at a time, at most once a second.
     * Until it is known, commands go through the cluster client.
     */
    private void readOwnMap(long timeoutMs) {
        if (kept || closed || options.get() == null || System.nanoTime() - readAtNanos < TimeUnit.SECONDS.toNanos(1)
                || !reading.compareAndSet(false, true)) {
            return;
        }
        readAtNanos = System.nanoTime();
        java.util.Set<String> ask = new LinkedHashSet<>(seeds());
        String[] known = owners;
        if (known != null) {
            for (String owner : known) {
                if (owner != null) {
                    ask.add(owner);
                }
            }
        }
        slotMap(ask, timeoutMs).onComplete(done -> {
            reading.set(false);
            if (done.succeeded() && !kept) {
                owners = done.result();
            }
        });
    }

    /** The master endpoint of a slot as last read; null when unknown. */
    public String ownerOf(int slot) {
        String[] map = owners;
        return map == null ? null : map[slot];
    }

    /**
     * Sends a command whose keys are all in one slot to that slot's master on the master's own
     * client, so that waiting for a hung node holds only that node's connections. Null when it
     * cannot (no slot map, no key, keys in several slots): the caller uses the cluster client. A
     * redirect (MOVED, ASK: Redis did not run it) or a failure to connect (nothing was sent) is
     * answered by the cluster client, which follows redirects, and the slot map is read again.
     */
    Future<Response> send(Request request, long timeoutMs, java.util.function.Function<Request, Future<Response>> cluster) {
        String[] map = owners;
        if (map == null || closed || options.get() == null) {
            if (map == null && !closed) {
                readOwnMap(timeoutMs);
            }
            return null;
        }
        List<byte[]> keys = ((io.vertx.redis.client.impl.RequestImpl) request).keys();
        if (keys.isEmpty()) {
            return null;
        }
        // The cluster client's own rule (hash tags included); -1 when the keys span slots.
        int slot = io.vertx.redis.client.impl.ZModem.generateMultiRaw(keys);
        String owner = slot < 0 ? null : map[slot];
        if (owner == null) {
            return null;
        }
        Redis node = commandClient(owner);
        boolean[] sent = { false };
        long sendBy = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        return node.connect().compose(c -> {
            if (System.nanoTime() - sendBy > 0) {
                // A connection that came only after the caller gave up (the node hung, then
                // answered): a command nobody waits for any more is not sent at all.
                c.close();
                return Future.failedFuture(new java.util.concurrent.TimeoutException("not sent: no connection to "
                        + owner + " within " + timeoutMs + " ms"));
            }
            sent[0] = true;
            return c.send(request).eventually(v -> c.close());
        }).recover(e -> {
            String message = String.valueOf(e.getMessage());
            if (e instanceof java.util.concurrent.TimeoutException) {
                onStale.run(); // a hung master may have been failed over meanwhile: ask for the map
                return Future.failedFuture(e);
            }
            boolean redirect = message.startsWith("MOVED") || message.startsWith("ASK");
            boolean refused = !sent[0] && (e instanceof java.net.ConnectException
                    || e.getCause() instanceof java.net.ConnectException);
            if (redirect || refused) {
                // The map is stale (a redirect, a node gone): the cluster client follows redirects
                // and knows the new master. Not once the caller has given up, though.
                onStale.run();
                if (System.nanoTime() - sendBy > 0) {
                    return Future.failedFuture(e);
                }
                return cluster.apply(request);
            }
            if (!sent[0]) {
                // No connection to be had from this node's pool (it is full of requests waiting for
                // a hung node): nothing was sent. Failing here keeps the hung node's requests out of
                // the cluster client's pool, which every master shares.
                return Future.failedFuture(new StoreUnavailableException("not sent: no connection to " + owner + " ("
                        + message + ")", e, true));
            }
            return Future.failedFuture(e);
        });
    }

    /**
     * The masters' endpoints and the slot map they serve (slot → endpoint): the map as last read,
     * else read now from the seeds (one CLUSTER SLOTS, the first answer wins).
     */
    public Future<String[]> masters(long timeoutMs) {
        String[] map = owners;
        return map != null ? Future.succeededFuture(map) : slotMap(seeds(), timeoutMs);
    }

    /** One command to one node, on a connection of its own (a keyless command: INFO), within {@code timeoutMs}. */
    public Future<Response> sendTo(String endpoint, Request request, long timeoutMs) {
        return connect(endpoint, timeoutMs).compose(c -> c.send(request).timeout(timeoutMs, TimeUnit.MILLISECONDS)
                .eventually(v -> c.close()));
    }

    /** The seed endpoints of the default client ({@code quarkus.redis.hosts}). */
    public List<String> seeds() {
        RedisOptions o = options.get();
        return o == null ? List.of() : List.copyOf(o.getEndpoints());
    }

    /**
     * A dedicated connection to one node, within {@code timeoutMs}; a connection that opens only
     * after that (the node answered late) is closed rather than left open with nobody to use it.
     */
    public Future<RedisConnection> connect(String endpoint, long timeoutMs) {
        Future<RedisConnection> connecting = client(endpoint).connect();
        Promise<RedisConnection> out = Promise.promise();
        Vertx vertx = this.vertx.get();
        long timer = vertx.setTimer(timeoutMs, t -> {
            // A connection that opens after this is closed below, once (a second close recycles
            // the pool's lease twice).
            out.tryFail(new java.util.concurrent.TimeoutException(endpoint + " did not answer within " + timeoutMs + " ms"));
        });
        connecting.onComplete(done -> {
            vertx.cancelTimer(timer);
            if (done.succeeded() && !out.tryComplete(done.result())) {
                done.result().close();
            } else if (done.failed()) {
                out.tryFail(done.cause());
            }
        });
        return out.future();
    }

    /**
     * The slot map: for each of the 16,384 slots the endpoint of its master (null: unserved). Asked
     * of every endpoint in {@code ask} at once, the first answer wins: any one node can say it, and
     * asking one at a time would wait out a hung one first.
     */
    public Future<String[]> slotMap(Collection<String> ask, long timeoutMs) {
        Promise<String[]> out = Promise.promise();
        List<String> endpoints = new ArrayList<>(new LinkedHashSet<>(ask));
        if (endpoints.isEmpty()) {
            return Future.failedFuture("no Redis endpoint to ask for the slot map");
        }
        int[] failed = { 0 };
        for (String endpoint : endpoints) {
            client(endpoint).send(Request.cmd(Command.CLUSTER).arg("SLOTS"))
                    .timeout(timeoutMs, TimeUnit.MILLISECONDS)
                    .onComplete(done -> {
                        if (done.succeeded()) {
                            try {
                                out.tryComplete(parse(endpoint, done.result()));
                                return;
                            } catch (RuntimeException e) {
                                // a malformed reply counts as no answer
                            }
                        }
                        synchronized (failed) {
                            if (++failed[0] == endpoints.size()) {
                                out.tryFail("no Redis node answered CLUSTER SLOTS: " + endpoints);
                            }
                        }
                    });
        }
        return out.future();
    }

    /** A CLUSTER SLOTS reply as slot → master endpoint, in the form (scheme, credentials) of {@code asked}. */
    static String[] parse(String asked, Response reply) {
        String[] owners = new String[SLOTS];
        for (int i = 0; i < reply.size(); i++) {
            Response range = reply.get(i);
            Response master = range.get(2);
            String host = master.get(0) == null ? "" : master.get(0).toString();
            String endpoint = endpoint(asked, host, master.get(1).toInteger());
            for (int s = range.get(0).toInteger(); s <= range.get(1).toInteger(); s++) {
                owners[s] = endpoint;
            }
        }
        return owners;
    }

    /** {@code asked} with its host and port replaced (an empty host: Redis 7's "the node you asked"). */
    static String endpoint(String asked, String host, int port) {
        URI u = URI.create(asked);
        String h = host.isEmpty() ? u.getHost() : host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
        String userInfo = u.getRawUserInfo() == null ? "" : u.getRawUserInfo() + "@";
        return u.getScheme() + "://" + userInfo + h + ":" + port;
    }

    /** A node's client for commands: the default client's options and pool size, one node. */
    private Redis commandClient(String endpoint) {
        return commandClients.computeIfAbsent(endpoint, e -> Redis.createClient(vertx.get(),
                new RedisOptions(options.get()).setType(RedisClientType.STANDALONE)
                        .setEndpoints(new ArrayList<>(List.of(e)))));
    }

    private Redis client(String endpoint) {
        return clients.computeIfAbsent(endpoint, e -> {
            // A few connections per node: its pub/sub connection, a slot-map read, and those a hung
            // node leaves waiting (each retry after a timeout may add one until the node answers).
            RedisOptions o = new RedisOptions(options.get()).setType(RedisClientType.STANDALONE)
                    .setEndpoints(new ArrayList<>(List.of(e))).setMaxPoolSize(4).setMaxPoolWaiting(16)
                    // RESP3: pub/sub messages are pushes, so a PING can share the subscribed connection.
                    .setProtocolNegotiation(true).setPreferredProtocolVersion(ProtocolVersion.RESP3);
            return Redis.createClient(vertx.get(), o);
        });
    }

    @PreDestroy
    void close() {
        closed = true;
        clients.values().forEach(Redis::close);
        clients.clear();
        commandClients.values().forEach(Redis::close);
        commandClients.clear();
    }
}
