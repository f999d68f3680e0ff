package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.jboss.logging.Logger;

import io.delayq.store.Keys;
import io.delayq.store.RedisGateway;
import io.delayq.store.RedisNodes;
import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;

/**
 * Listens on the wake-up channels of the served partitions: when a job becomes the earliest of a
 * partition (enqueue, retry, drain), the script that scheduled it publishes its runAt, and the
 * partition's taker here cuts its sleep short.
 * <p>
 * A single Redis: one dedicated connection ({@code SUBSCRIBE}); when it drops it is
 * re-established and every taker is woken once, since messages may have been missed meanwhile.
 * <p>
 * A Redis Cluster: the channels are sharded (Redis 7 {@code SSUBSCRIBE}), a message never leaves
 * its slot's master, so each master gets a connection of its own ({@link RedisNodes}), subscribed
 * to the channels of the slots it serves. One cluster-wide connection would be opened by the
 * Vert.x client only once every master connects: one hung master would silence every partition,
 * and a re-subscription after any drop would wait for it. Per node, a master that hangs (no reply
 * to a PING within the Redis timeout) or whose connection ends is retried on its own while the
 * others keep listening; when its subscription is back, only its own takers are woken once. A
 * hung node is also reported to the {@link TakerLoop}, which then lets one take at a time reach
 * it. A slot that moved (SUNSUBSCRIBE, MOVED) or a node that fails makes the slot map be read
 * again and the affected channels subscribed where their slots are now. Each replica does this on
 * its own: no leader, nothing shared but Redis.
 */
final class WakeUps {
    private static final Logger LOG = Logger.getLogger(WakeUps.class);
    /** Pause before a failed subscription is tried again. */
    private static final long RETRY_MS = 500;
    /** How often the slot map is read again when nothing asked for it (a change that told nobody). */
    private static final long SLOT_MAP_EVERY_MS = 30_000;
    private final RedisGateway redis;
    private final Map<String, DueTaker> byChannel;
    private final RedisNodes nodes;
    private final TakerLoop loop;
    private final long timeoutMs;
    private final long pingEveryMs;
    private volatile boolean running;
    private volatile Thread thread;
    private volatile RedisConnection connection;
    private volatile boolean subscribed;
    /** Counted down when the current subscription's connection must be given up. */
    private volatile CountDownLatch closed;

    // ---- cluster, per node
    /** The slot of each channel's hash tag. */
    private final Map<String, Integer> slotOf = new HashMap<>();
    private final Map<DueTaker, Integer> takerSlot = new HashMap<>();
    /** The current slot map (slot → master endpoint), null until first read. */
    private volatile String[] owners;
    /** Master endpoint → its subscription. */
    private final Map<String, NodeSubscription> perNode = new ConcurrentHashMap<>();
    /** Asks the coordinator to read the slot map again. */
    private final LinkedBlockingQueue<String> refresh = new LinkedBlockingQueue<>();

    /** A single Redis, or a cluster through one cluster connection (when per-node clients cannot be had). */
    WakeUps(RedisGateway redis, Map<String, DueTaker> byChannel) {
        this(redis, byChannel, null, null, 5000);
    }

    /**
     * @param nodes per-node clients on a cluster (null: one connection for all)
     * @param loop told when a node hangs or answers again (may be null)
     * @param timeoutMs the Redis timeout: a node that does not answer within it is taken as hung
     */
    WakeUps(RedisGateway redis, Map<String, DueTaker> byChannel, RedisNodes nodes, TakerLoop loop, long timeoutMs) {
        this.redis = redis;
        this.byChannel = byChannel;
        this.nodes = nodes != null && redis.cluster() ? nodes : null;
        this.loop = loop;
        this.timeoutMs = timeoutMs;
        // Often enough that a hung node is found within a few seconds, rarely enough that an idle
        // replica costs each master almost nothing (0.4 commands/s with the default 5 s timeout).
        this.pingEveryMs = Math.max(1000, timeoutMs / 2);
        byChannel.forEach((channel, taker) -> {
            int slot = Keys.slot(hashTag(channel));
            slotOf.put(channel, slot);
            takerSlot.put(taker, slot);
        });
    }

    /** What Redis Cluster hashes of a key: the part between the first braces, if not empty. */
    static String hashTag(String key) {
        int open = key.indexOf('{');
        if (open >= 0) {
            int close = key.indexOf('}', open + 1);
            if (close > open + 1) {
                return key.substring(open + 1, close);
            }
        }
        return key;
    }

    /**
     * The Redis node a taker's partition lives on, for the take permits: "" on a single Redis (or
     * without per-node clients), the master's endpoint on a cluster, "?" before the slot map is known.
     */
    String nodeOf(DueTaker taker) {
        if (nodes == null) {
            return "";
        }
        String[] map = owners;
        Integer slot = takerSlot.get(taker);
        String owner = map == null || slot == null ? null : map[slot];
        return owner == null ? "?" : owner;
    }

    /** How many Redis nodes serve the partitions: 1 on a single Redis (or before the slot map is known). */
    int nodeCount() {
        return nodes == null ? 1 : Math.max(1, perNode.size());
    }

    void start() {
        if (byChannel.isEmpty()) {
            return;
        }
        running = true;
        if (nodes != null) {
            thread = Thread.ofVirtual().name("delayq-wakeups").start(this::coordinate);
        } else {
            thread = Thread.ofPlatform().name("delayq-wakeups").daemon().start(this::loop);
        }
    }

    void stop() {
        running = false;
        RedisConnection c = connection;
        if (c != null) {
            c.close();
        }
        perNode.values().forEach(NodeSubscription::stop);
        Thread t = thread;
        if (t != null) {
            t.interrupt();
        }
    }

    /**
     * Whether the subscription is currently established: on a cluster, every node's (a node whose
     * subscription is down silences its own partitions only, and is retried on its own).
     */
    boolean subscribed() {
        if (nodes == null) {
            return subscribed;
        }
        return owners != null && !perNode.isEmpty() && perNode.values().stream().allMatch(n -> n.up);
    }


    /**
     * Redis answers again after the safety-net poll saw it away. On a single Redis the one
     * subscription is made again: a connection that lived through a cut while Redis restarted can
     * be half-open for good (nothing is ever sent on it, so nothing resets it), and wake-ups would
     * stop while it looks subscribed. (On a cluster each node's subscription is PINGed.) Any thread.
     */
    void recovered() {
        CountDownLatch c = closed;
        if (running && !redis.cluster() && c != null && subscribed) {
            LOG.debug("Redis answers again after an outage: making the wake-up subscription again");
            c.countDown();
        }
    }

    private void loop() {
        boolean first = true;
        while (running) {
            CountDownLatch closed = new CountDownLatch(1);
            this.closed = closed;
            try {
                RedisConnection c = redis.connect();
                connection = c;
                c.handler(this::onMessage);
                c.exceptionHandler(e -> closed.countDown());
                c.endHandler(v -> closed.countDown());
                if (redis.cluster()) {
                    // One SSUBSCRIBE per channel: the client routes each to its slot's master.
                    List<Future<Response>> sent = new ArrayList<>();
                    byChannel.keySet().forEach(ch -> sent.add(c.send(Request.cmd(Command.SSUBSCRIBE).arg(ch))));
                    Future.all(sent).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
                } else {
                    Request subscribe = Request.cmd(Command.SUBSCRIBE);
                    byChannel.keySet().forEach(subscribe::arg);
                    c.send(subscribe).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
                }
                subscribed = true;
                if (!first) {
                    LOG.info("wake-up subscription re-established; waking every taker once");
                    byChannel.values().forEach(t -> t.wake(Long.MIN_VALUE));
                }
                first = false;
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                if (running) {
                    LOG.debugf("wake-up subscription failed: %s", e.toString());
                }
            } finally {
                subscribed = false;
                RedisConnection c = connection;
                connection = null;
                if (c != null) {
                    try {
                        c.close();
                    } catch (RuntimeException ignored) {
                        // already closed
                    }
                }
            }
            if (running) {
                first = false;
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    private void onMessage(Response r) {
        if (r != null && r.type() == ResponseType.ERROR) {
            // A subscription refused (on a cluster: MOVED, the slot map was stale): give up this
            // connection and subscribe everything again, against a fresher slot map.
            CountDownLatch c = closed;
            if (running && c != null) {
                LOG.debugf("wake-up subscription refused: %s; subscribing again", r);
                c.countDown();
            }
            return;
        }
        // RESP2 and RESP3 both deliver ["message", channel, payload] ("smessage" when sharded).
        if (r == null || r.size() < 3) {
            return;
        }
        String kind = r.get(0).toString();
        if ("sunsubscribe".equals(kind)) {
            // A sharded channel's slot moved to another node (resharding, failover): Redis dropped
            // the subscription. Subscribe everything again where the slots are now.
            CountDownLatch c = closed;
            if (running && c != null) {
                LOG.infof("wake-up channel %s moved to another Redis node; subscribing again", r.get(1));
                c.countDown(); // the loop closes the connection and subscribes again
            }
            return;
        }
        if (!"message".equals(kind) && !"smessage".equals(kind)) {
            return;
        }
        deliver(byChannel.get(r.get(1).toString()), r);
    }

    /**
     * A message of a partition's channel to its taker: a runAt (a job became the earliest), or
     * "c &lt;lease token&gt; &lt;id&gt;" from cancel.lua: the job's cancel, for the replica running it
     * (the others hold no such lease and ignore it).
     */
    static void deliver(DueTaker taker, Response r) {
        if (taker == null) {
            return;
        }
        String message = r.get(2).toString();
        if (message.startsWith("c ")) {
            int last = message.lastIndexOf(' ');
            if (last > 2) {
                taker.cancel(message.substring(2, last), message.substring(last + 1));
                return;
            }
        }
        try {
            taker.wake(Long.parseLong(message));
        } catch (NumberFormatException e) {
            LOG.debugf("ignored wake-up message %s", r);
        }
    }

    // ------------------------------------------------------------ cluster: one subscription per node

    /**
     * Reads the slot map and keeps one subscription per master to the channels of its slots; reads
     * the map again when a subscription asks (a slot moved, a node failed) and now and then.
     */
    private void coordinate() {
        while (running) {
            try {
                String[] map = readSlotMap();
                if (map != null) {
                    reconcile(map);
                }
                // Coalesce a burst of requests (every channel of a moved range says so) into one read.
                String why = refresh.poll(map == null ? RETRY_MS : SLOT_MAP_EVERY_MS, TimeUnit.MILLISECONDS);
                if (why != null) {
                    LOG.debugf("wake-ups: reading the slot map again (%s)", why);
                    Thread.sleep(100);
                    refresh.clear();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                LOG.warnf(e, "wake-ups: the subscriptions could not be arranged; trying again");
                try {
                    Thread.sleep(RETRY_MS);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    private String[] readSlotMap() throws InterruptedException {
        if (!nodes.available()) {
            return null;
        }
        // Any node can tell: the seeds and the masters last known, all at once.
        Set<String> ask = new LinkedHashSet<>(perNode.keySet());
        ask.addAll(nodes.seeds());
        try {
            return nodes.slotMap(ask, timeoutMs).toCompletionStage().toCompletableFuture().get(timeoutMs + 1000,
                    TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException | TimeoutException e) {
            LOG.debugf("wake-ups: no slot map yet: %s", e.toString());
            return null;
        }
    }

    /** One subscription per master for the channels it serves now; those that changed are made anew. */
    private void reconcile(String[] map) {
        boolean initial = owners == null;
        owners = map;
        nodes.slots(map, () -> refresh.offer("a reply said the slot map is stale"));
        Map<String, Set<String>> channelsOf = new HashMap<>();
        boolean unserved = false;
        for (Map.Entry<String, Integer> e : slotOf.entrySet()) {
            String owner = map[e.getValue()];
            if (owner == null) {
                unserved = true; // a slot in the middle of a failover: look again soon
                continue;
            }
            channelsOf.computeIfAbsent(owner, o -> new HashSet<>()).add(e.getKey());
        }
        for (Map.Entry<String, NodeSubscription> e : perNode.entrySet()) {
            Set<String> now = channelsOf.get(e.getKey());
            if (now == null || !now.equals(e.getValue().channels)) {
                e.getValue().stop();
                perNode.remove(e.getKey(), e.getValue());
            }
        }
        channelsOf.forEach((node, channels) -> perNode.computeIfAbsent(node, n -> {
            // A channel that moved here may have had messages published while nobody listened on
            // this node: its takers are woken once the subscription is up. At start-up nobody needs
            // to be, every taker takes once anyway.
            NodeSubscription sub = new NodeSubscription(n, channels, !initial);
            sub.start();
            return sub;
        }));
        if (unserved) {
            refresh.offer("a slot without a master");
        }
    }

    /** The subscription of one master; a virtual thread keeps it up and checks that the node answers. */
    private final class NodeSubscription {
        final String node;
        final Set<String> channels;
        private final boolean wakeFirst;
        volatile boolean up;
        private volatile boolean active = true;
        private volatile Thread thread;
        private volatile RedisConnection connection;
        private volatile CountDownLatch ended;
        private final Set<String> confirmed = ConcurrentHashMap.newKeySet();

        NodeSubscription(String node, Set<String> channels, boolean wakeFirst) {
            this.node = node;
            this.channels = Set.copyOf(channels);
            this.wakeFirst = wakeFirst;
        }

        void start() {
            thread = Thread.ofVirtual().name("delayq-wakeups-" + node.replaceAll(".*@", "")).start(this::run);
        }

        void stop() {
            active = false;
            up = false;
            RedisConnection c = connection;
            if (c != null) {
                c.close();
            }
            Thread t = thread;
            if (t != null) {
                t.interrupt();
            }
        }

        private boolean live() {
            return active && running;
        }

        private void run() {
            boolean first = true;
            while (live()) {
                CountDownLatch end = new CountDownLatch(1);
                ended = end;
                confirmed.clear();
                try {
                    RedisConnection c = nodes.connect(node, timeoutMs).toCompletionStage().toCompletableFuture().get();
                    connection = c;
                    if (!live()) {
                        return;
                    }
                    c.handler(this::onMessage);
                    c.exceptionHandler(e -> end.countDown());
                    c.endHandler(v -> end.countDown());
                    // One SSUBSCRIBE per channel: in a cluster all channels of one call must share a slot.
                    List<Future<Response>> sent = new ArrayList<>(channels.size());
                    channels.forEach(ch -> sent.add(c.send(Request.cmd(Command.SSUBSCRIBE).arg(ch))));
                    Future.all(sent).toCompletionStage().toCompletableFuture().get(timeoutMs, TimeUnit.MILLISECONDS);
                    // SSUBSCRIBE is answered by a push per channel: only then is the node listening.
                    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
                    while (confirmed.size() < channels.size()) {
                        if (end.await(10, TimeUnit.MILLISECONDS) || !live()) {
                            throw new IllegalStateException("the subscription ended before it was confirmed");
                        }
                        if (System.nanoTime() > until) {
                            throw new TimeoutException(node + " did not confirm the subscriptions within " + timeoutMs + " ms");
                        }
                    }
                    up = true;
                    if (loop != null) {
                        loop.nodeAnswered(node);
                    }
                    if (!first || wakeFirst) {
                        LOG.infof("wake-up subscription on %s established; waking its %d taker(s) once", node, channels.size());
                        channels.forEach(ch -> byChannel.get(ch).wake(Long.MIN_VALUE));
                    }
                    first = false;
                    // PING on the subscribed connection (RESP3 allows it): a node that hangs keeps its
                    // sockets open, and only a question left unanswered shows it.
                    while (live() && !end.await(pingEveryMs, TimeUnit.MILLISECONDS)) {
                        c.send(Request.cmd(Command.PING)).toCompletionStage().toCompletableFuture().get(timeoutMs,
                                TimeUnit.MILLISECONDS);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                } catch (Exception e) {
                    Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
                    if (live()) {
                        boolean hung = cause instanceof TimeoutException;
                        if (hung && loop != null) {
                            loop.nodeSilent(node); // its takes would wait for the Redis timeout too
                        }
                        LOG.log(up || first ? Logger.Level.INFO : Logger.Level.DEBUG,
                                "wake-up subscription on " + node + (hung ? " hangs" : " failed") + ": " + cause
                                        + "; retrying it alone, the other nodes' stay");
                        // Hung or gone, it may have been failed over: where are its slots now?
                        refresh.offer(node + " failed");
                    }
                } finally {
                    up = false;
                    RedisConnection c = connection;
                    connection = null;
                    if (c != null) {
                        try {
                            c.close();
                        } catch (RuntimeException ignored) {
                            // already closed
                        }
                    }
                }
                if (live()) {
                    first = false;
                    try {
                        Thread.sleep(RETRY_MS);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }

        private void onMessage(Response r) {
            if (r == null) {
                return;
            }
            if (r.type() == ResponseType.ERROR) {
                // A subscription refused (MOVED: the slot is elsewhere now): read the map again.
                refresh.offer("refused on " + node + ": " + r);
                endNow();
                return;
            }
            if ((r.type() != ResponseType.PUSH && r.type() != ResponseType.MULTI) || r.size() < 2) {
                LOG.debugf("wake-ups on %s: ignored %s", node, r);
                return;
            }
            String kind = r.get(0).toString();
            switch (kind) {
                case "ssubscribe" -> confirmed.add(r.get(1).toString());
                case "sunsubscribe" -> {
                    // A channel's slot moved to another node (resharding, failover): Redis dropped
                    // its subscription. Subscribe again where the slots are now.
                    LOG.infof("wake-up channel %s moved off %s; subscribing again", r.get(1), node);
                    refresh.offer("moved off " + node);
                    endNow();
                }
                case "smessage" -> {
                    if (r.size() < 3) {
                        return;
                    }
                    deliver(byChannel.get(r.get(1).toString()), r);
                }
                default -> {
                }
            }
        }

        private void endNow() {
            CountDownLatch c = ended;
            if (c != null) {
                c.countDown();
            }
        }
    }
}
