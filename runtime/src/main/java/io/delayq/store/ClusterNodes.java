package io.delayq.store;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.impl.types.ErrorType;

/**
 * On a Redis Cluster: the master of every slot, and a pooled client of its own per master, so that
 * a command for one partition waits for that partition's master and nothing else. Vert.x' cluster
 * client takes a connection to every node of the cluster for each command (and opens a cluster
 * connection only when every node connects): one master that stops answering — its TCP
 * connections hang, as after a lost node or a partition — would soon hold up the commands of every
 * partition on every master. Here a hung master fills only its own pool.
 * <p>
 * The slot map comes from {@code CLUSTER SLOTS}, asked of every known node at once (the first
 * answer wins: a hung node cannot delay it), at first use and again after a redirect, a lost
 * connection or a timeout (at most every {@value #REFRESH_GAP_MS} ms): that is how a failover's new
 * master is found. {@code MOVED} is followed at once to the node it names, {@code ASK} with
 * {@code ASKING} on that node, as Vert.x' cluster client does.
 */
@ApplicationScoped
public class ClusterNodes {
    private static final Logger LOG = Logger.getLogger(ClusterNodes.class);
    private static final int SLOTS = 16_384;
    private static final long REFRESH_GAP_MS = 500;
    private static final int MAX_REDIRECTS = 3;
    private final Vertx vertx;
    private final EventLoopConnections options;
    private final Map<String, Redis> clients = new ConcurrentHashMap<>();
    /** "host:port" of the master of each slot; null until the first map was read. */
    private volatile String[] masters;
    /** Every node the last map named (masters and replicas): where the next map is asked. */
    private volatile List<String> known = List.of();
    private final AtomicBoolean refreshing = new AtomicBoolean();
    private volatile long refreshedAtMs;
    private volatile Future<Void> firstMap;
    private volatile boolean closed;

    private final long timeoutMs;

    public ClusterNodes(Vertx vertx, EventLoopConnections options, io.delayq.core.DelayqConfig config) {
        this.vertx = vertx;
        this.options = options;
        this.timeoutMs = config.redisTimeout().toMillis();
    }

    /** The slot of a key by Redis Cluster's rule: the hash tag's when the key has a non-empty one. */
    static int slotOf(String key) {
        int open = key.indexOf('{');
        if (open >= 0) {
            int close = key.indexOf('}', open + 1);
            if (close > open + 1) {
                return Keys.slot(key.substring(open + 1, close));
            }
        }
        return Keys.slot(key);
    }

    /**
     * A key of the request when all its keys are in one slot (Vert.x' own key specs find them),
     * else null: such a command goes through the cluster client, which splits or refuses it.
     */
    static String slotKey(Request request) {
        if (!(request instanceof io.vertx.redis.client.impl.RequestImpl impl)) {
            return null;
        }
        List<byte[]> keys = impl.keys();
        if (keys.isEmpty()) {
            return null;
        }
        String first = new String(keys.get(0), java.nio.charset.StandardCharsets.UTF_8);
        int slot = slotOf(first);
        for (int i = 1; i < keys.size(); i++) {
            if (slotOf(new String(keys.get(i), java.nio.charset.StandardCharsets.UTF_8)) != slot) {
                return null;
            }
        }
        return first;
    }

    /** Sends a command to the master of {@code key}'s slot. */
    Future<Response> send(String key, Request request) {
        return call(slotOf(key), request, 0);
    }

    /** Pipelines requests (all of {@code key}'s slot) on one connection to that slot's master. */
    Future<List<Response>> batch(String key, List<Request> requests) {
        int slot = slotOf(key);
        return master(slot).compose(node -> client(node).batch(requests).recover(e -> {
            String moved = redirect(e, "MOVED ");
            if (moved != null) {
                learn(slot, moved);
            } else {
                suspect();
            }
            return Future.failedFuture(e); // the caller's retry finds the new master
        }));
    }

    /** A call on the master of {@code key}'s slot timed out: the slot map may be stale (a failover). */
    void timedOut(String key) {
        suspect();
    }

    private Future<Response> call(int slot, Request request, int redirects) {
        return master(slot).compose(node -> client(node).send(request).recover(e -> {
            String moved = redirect(e, "MOVED ");
            if (moved != null && redirects < MAX_REDIRECTS) {
                learn(slot, moved);
                return call(slot, request, redirects + 1);
            }
            String ask = redirect(e, "ASK ");
            if (ask != null && redirects < MAX_REDIRECTS) {
                return client(ask).batch(List.of(Request.cmd(Command.ASKING), request)).map(r -> r.get(1));
            }
            if (!(e instanceof ErrorType) || e.getMessage() == null || e.getMessage().startsWith("CLUSTERDOWN")
                    || e.getMessage().startsWith("READONLY") || e.getMessage().startsWith("MASTERDOWN")
                    || e.getMessage().startsWith("TRYAGAIN")) {
                suspect(); // a lost connection, or a node that is no master (any more): ask for the map
            }
            return Future.failedFuture(e);
        }));
    }

    /** "host:port" of a MOVED/ASK redirect ({@code MOVED 3999 127.0.0.1:6381}), else null. */
    private static String redirect(Throwable e, String kind) {
        if (e instanceof ErrorType && e.getMessage() != null && e.getMessage().startsWith(kind)) {
            String[] parts = e.getMessage().split(" ");
            return parts.length >= 3 ? parts[2] : null;
        }
        return null;
    }

    private void learn(int slot, String node) {
        String[] m = masters;
        if (m != null) {
            m[slot] = node;
        }
        suspect();
    }

    private Future<String> master(int slot) {
        String[] m = masters;
        if (m != null && m[slot] != null) {
            return Future.succeededFuture(m[slot]);
        }
        return firstMap().compose(v -> {
            String[] now = masters;
            String node = now == null ? null : now[slot];
            return node != null ? Future.succeededFuture(node)
                    : Future.failedFuture(new StoreUnavailableException("no Redis Cluster master serves slot " + slot, null));
        });
    }

    private Future<Void> firstMap() {
        Future<Void> f = firstMap;
        if (f == null || f.failed()) {
            synchronized (this) {
                f = firstMap;
                if (f == null || f.failed()) {
                    f = readMap();
                    firstMap = f;
                }
            }
        }
        return f;
    }

    /** The map may be stale: read it again soon (at most every {@value #REFRESH_GAP_MS} ms). */
    private void suspect() {
        if (closed || masters == null || System.currentTimeMillis() - refreshedAtMs < REFRESH_GAP_MS) {
            return;
        }
        if (refreshing.compareAndSet(false, true)) {
            readMap().onComplete(done -> refreshing.set(false));
        }
    }

    /** Reads the slot map from whichever known node answers first. */
    private Future<Void> readMap() {
        refreshedAtMs = System.currentTimeMillis();
        List<String> ask = new ArrayList<>(known);
        if (ask.isEmpty()) {
            for (String endpoint : baseOptions().getEndpoints()) {
                URI uri = URI.create(endpoint);
                ask.add(uri.getHost() + ":" + uri.getPort());
            }
        }
        Promise<Void> read = Promise.promise();
        List<Future<Response>> asked = new ArrayList<>();
        for (String node : ask) {
            Future<Response> slots = client(node).send(Request.cmd(Command.CLUSTER).arg("SLOTS"));
            asked.add(slots);
            slots.onSuccess(r -> {
                if (!read.future().isComplete()) {
                    use(r, node);
                    read.tryComplete();
                }
            });
        }
        // A hung node never answers (Vert.x has no timeout of its own): the read gives up with the
        // Redis timeout, so that a later suspicion can try again.
        Future.join(asked).onComplete(done -> read.tryFail(
                new StoreUnavailableException("no Redis Cluster node answered CLUSTER SLOTS (asked " + ask + ")", done.cause())));
        vertx.setTimer(timeoutMs, t -> read.tryFail(new StoreUnavailableException(
                "no Redis Cluster node answered CLUSTER SLOTS within " + timeoutMs + " ms (asked " + ask + ")", null)));
        return read.future();
    }

    private synchronized void use(Response slots, String answeredBy) {
        String[] m = new String[SLOTS];
        List<String> nodes = new ArrayList<>();
        String fallbackHost = answeredBy.substring(0, answeredBy.lastIndexOf(':'));
        for (Response range : slots) {
            int from = range.get(0).toInteger();
            int to = range.get(1).toInteger();
            for (int i = 2; i < range.size(); i++) {
                Response n = range.get(i);
                String host = n.get(0) == null || n.get(0).toString().isEmpty() || "?".equals(n.get(0).toString())
                        ? fallbackHost : n.get(0).toString();
                String node = host + ":" + n.get(1).toInteger();
                if (!nodes.contains(node)) {
                    nodes.add(node);
                }
                if (i == 2) {
                    for (int s = from; s <= to; s++) {
                        m[s] = node;
                    }
                }
            }
        }
        String[] old = masters;
        masters = m;
        known = List.copyOf(nodes);
        if (old != null && !java.util.Arrays.equals(old, m)) {
            LOG.infof("Redis Cluster slot map changed (read from %s)", answeredBy);
        }
    }

    private Redis client(String node) {
        Redis c = clients.get(node);
        return c != null ? c : clients.computeIfAbsent(node, this::newClient);
    }

    private Redis newClient(String node) {
        RedisOptions base = baseOptions();
        // The same user and password as the configured hosts (a password set apart is in the options).
        String userInfo = URI.create(base.getEndpoint()).getRawUserInfo();
        String endpoint = "redis://" + (userInfo == null ? "" : userInfo + "@") + node;
        return Redis.createClient(vertx, new RedisOptions(base).setType(RedisClientType.STANDALONE).setEndpoints(
                new ArrayList<>(List.of(endpoint))));
    }

    private RedisOptions baseOptions() {
        RedisOptions o = options.options();
        if (o == null) {
            throw new StoreUnavailableException("the Redis client's options are not known yet", null);
        }
        return o;
    }

    @PreDestroy
    void close() {
        closed = true;
        clients.values().forEach(Redis::close);
    }
}
