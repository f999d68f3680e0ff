package io.delayq.dispatch;

import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

import org.jboss.logging.Logger;

import io.delayq.store.RedisClock;

/**
 * Drives every {@link DueTaker} of this replica on one platform thread, {@code delayq-takers}:
 * a replica serving a thousand partitions holds one thread for them, not a thousand. A taker is
 * a state machine; this loop runs its steps — a timer that fell due (the earliest job it knows,
 * a back-off), a wake-up, a take's reply, a worker slot freed — one at a time, so a taker's
 * state needs no lock. Takes are asynchronous Redis calls: the loop sends one and goes on with
 * the other partitions; the reply comes back here as a task.
 * <p>
 * Timers are monotonic instants computed from each partition's Redis clock
 * ({@link RedisClock#nanosAt}); the loop parks until 100 µs before the earliest and then in
 * 50 µs steps, since a park overshoots by about that much: a job due at T is taken at T, not at
 * T plus a park's slack. The loop wakes at least every safety-net interval to show that it is
 * alive ({@link #lastBeatNanos}).
 * <p>
 * Take permits are counted per Redis node (a single Redis is one node; on a cluster, the master of
 * the partition's slot, as {@link WakeUps#nodeOf} says): at most {@link #maxPerNode} takes are in
 * flight to one node at once, and more partitions due together (a reconnect wakes every taker)
 * queue in arrival order, per node: their takes wait for a reply here instead of in the Redis
 * client's pool, which they would otherwise fill. Per node, because a node that hangs holds its
 * takes for the whole Redis timeout: with one count for all, its partitions' takes would use up
 * the permits and the healthy nodes' partitions would queue behind them. A node whose take timed
 * out, or whose wake-up connection found it hung, is <em>silent</em>: one take at a time reaches
 * it until one is answered (the Vert.x cluster client keeps a request's connection, to every node,
 * until its reply comes: a hung node's takes must stay few, or they empty the shared pool).
 */
final class TakerLoop {
    private static final Logger LOG = Logger.getLogger(TakerLoop.class);
    /** Takes in flight to one node at most (a single Redis). */
    static final int MAX_TAKES_IN_FLIGHT = 64;
    private static final long SPIN_NANOS = 100_000;

    /** A taker's timer; a taker holds at most one (a new plan cancels the old), so there are no more than takers. */
    record Timer(long atNanos, long seq, DueTaker taker) {
    }

    private final ConcurrentLinkedQueue<Runnable> inbox = new ConcurrentLinkedQueue<>();
    private final TreeSet<Timer> timers = new TreeSet<>(
            Comparator.comparingLong(Timer::atNanos).thenComparingLong(Timer::seq));
    private long timerSeq;
    /** Per node: takes in flight, the takers waiting for a permit, whether it is silent. Loop thread only. */
    private static final class Node {
        int inFlight;
        boolean silent;
        final ArrayDeque<DueTaker> queued = new ArrayDeque<>();
        /** Worker slots of each topic's pool reserved by this node's takes in flight. */
        final Map<WorkerPool, Integer> reservedSlots = new java.util.IdentityHashMap<>();
    }

    private final Map<String, Node> nodes = new HashMap<>();
    private final long beatNanos;
    private final int maxPerNode;
    private int takesInFlight;
    private volatile Function<DueTaker, String> nodeOf = t -> "";
    private volatile java.util.function.IntSupplier nodeCount = () -> 1;
    private volatile boolean running;
    private volatile Thread thread;
    private volatile long lastBeatNanos = System.nanoTime();

    TakerLoop(long beatMs) {
        this(beatMs, MAX_TAKES_IN_FLIGHT);
    }

    /** @param maxPerNode takes in flight to one node at most */
    TakerLoop(long beatMs, int maxPerNode) {
        this.beatNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(10, beatMs));
        this.maxPerNode = Math.max(1, maxPerNode);
    }

    /** Which node each taker's take goes to (asked at each take: slots move); before start. */
    void nodes(Function<DueTaker, String> nodeOf, java.util.function.IntSupplier nodeCount) {
        this.nodeOf = nodeOf;
        this.nodeCount = nodeCount;
    }

    /** A node did not answer within the Redis timeout: one take at a time for it until one is answered. Any thread. */
    void nodeSilent(String node) {
        post(() -> node(node).silent = true);
    }

    /** A node answered (a take, its wake-up subscription): its full share of permits again. Any thread. */
    void nodeAnswered(String node) {
        post(() -> answered(node));
    }

    /** Starts the thread, then every taker (each takes once at start: it knows no due time yet). */
    void start(List<DueTaker> takers) {
        running = true;
        thread = Thread.ofPlatform().name("delayq-takers").daemon().start(this::loop);
        post(() -> takers.forEach(DueTaker::begin));
    }

    /**
     * Stops every taker; takes in flight complete (their jobs start) before the thread ends,
     * within {@code timeoutMs}. Returns whether the thread ended.
     */
    boolean stop(List<DueTaker> takers, long timeoutMs) throws InterruptedException {
        Thread t = thread;
        if (t == null) {
            return true;
        }
        post(() -> {
            nodes.values().forEach(n -> n.queued.clear());
            takers.forEach(DueTaker::end);
            running = false;
        });
        t.join(timeoutMs);
        return !t.isAlive();
    }

    /** Runs {@code task} on the loop thread, soon; any thread. */
    void post(Runnable task) {
        inbox.add(task);
        Thread t = thread;
        if (t != null && t != Thread.currentThread()) {
            LockSupport.unpark(t);
        }
    }

    boolean alive() {
        Thread t = thread;
        return t != null && t.isAlive();
    }

    /** When the loop last went round (it does at least every safety-net interval). */
    long lastBeatNanos() {
        return lastBeatNanos;
    }

    // ------------------------------------------------------------ loop thread only

    /** Calls {@code taker.onTimer(timer)} at the monotonic instant {@code atNanos}, unless cancelled. */
    Timer at(long atNanos, DueTaker taker) {
        Timer t = new Timer(atNanos, ++timerSeq, taker);
        timers.add(t);
        return t;
    }

    void cancel(Timer t) {
        if (t != null) {
            timers.remove(t);
        }
    }

    /**
     * A permit for one take to the taker's node; false when that node has its share in flight or
     * others wait before it (the taker is queued, in arrival order). A queued taker is handed its
     * permit when one of its node is given back ({@link #passTurn}); it uses it on its next call here.
     * The taker keeps the node it got the permit of ({@link DueTaker#permitNode}) to give it back there.
     */
    boolean acquireTake(DueTaker taker, String id) {
        if (taker.useGrant()) {
            return true;
        }
        Node n = node(id);
        if (n.inFlight < limit(n) && n.queued.isEmpty()) {
            n.inFlight++;
            takesInFlight++;
            taker.permitNode = id;
            return true;
        }
        n.queued.add(taker); // it calls here again only with the permit it is handed
        return false;
    }

    /** Gives back a take's permit of {@code node} (also one granted and not used); its first queued taker gets it. */
    void releaseTake(String node) {
        Node n = node(node);
        n.inFlight--;
        takesInFlight--;
        passTurn(node, n);
    }

    /** The node a taker's next take goes to. */
    String nodeOf(DueTaker taker) {
        return nodeOf.apply(taker);
    }

    /**
     * How many more of a topic's worker slots takes to {@code node} may reserve now: the topic's
     * concurrency divided among the nodes (all of it with one node), less what that node's takes
     * in flight hold; 1 at most for a silent node. A take holds its reserved slots until its reply,
     * so without this a take hung on one node would keep every free slot of its topic from the
     * partitions on the other nodes for the whole Redis timeout.
     */
    int slotShare(WorkerPool pool, String node) {
        Node n = node(node);
        int share = n.silent ? 1 : Math.max(1, pool.concurrency() / Math.max(1, nodeCount.getAsInt()));
        int held = n.reservedSlots.getOrDefault(pool, 0);
        return Math.max(0, share - held);
    }

    /** Slots reserved ({@code delta} > 0) or given back by a take to {@code node}. */
    void slotsReserved(WorkerPool pool, String node, int delta) {
        node(node).reservedSlots.merge(pool, delta, Integer::sum);
    }

    /** Loop thread: a take to {@code node} was answered. */
    void answered(String node) {
        Node n = nodes.get(node);
        if (n != null && n.silent) {
            n.silent = false;
            passTurn(node, n);
        }
    }

    private Node node(String id) {
        return nodes.computeIfAbsent(id, k -> new Node());
    }

    private int limit(Node n) {
        return n.silent ? 1 : maxPerNode;
    }

    /**
     * Hands free permits of a node to its queued takers, first come first served: a permit given
     * back goes to the head of the queue, not to whichever taker asks next (a busy partition taking
     * full batches back to back would otherwise keep the queued ones waiting for good).
     */
    private void passTurn(String id, Node n) {
        while (n.inFlight < limit(n)) {
            DueTaker next = n.queued.poll();
            if (next == null) {
                return;
            }
            n.inFlight++;
            takesInFlight++;
            next.permitNode = id;
            next.grant();
            inbox.add(next::dequeued);
        }
    }

    private void loop() {
        while (true) {
            lastBeatNanos = System.nanoTime();
            Runnable task;
            while ((task = inbox.poll()) != null) {
                runSafely(task);
            }
            if (!running && takesInFlight == 0) {
                return;
            }
            long now = System.nanoTime();
            Timer due;
            while (!timers.isEmpty() && (due = timers.first()).atNanos() - now <= 0) {
                timers.pollFirst();
                Timer fired = due;
                runSafely(() -> fired.taker().onTimer(fired));
            }
            if (!inbox.isEmpty()) {
                continue;
            }
            Timer first = timers.isEmpty() ? null : timers.first();
            long wait = first == null ? beatNanos : Math.min(beatNanos, first.atNanos() - System.nanoTime());
            if (wait > SPIN_NANOS) {
                LockSupport.parkNanos(wait - SPIN_NANOS);
            } else if (wait > 0) {
                LockSupport.parkNanos(Math.min(wait, 50_000));
            }
        }
    }

    private static void runSafely(Runnable task) {
        try {
            task.run();
        } catch (RuntimeException | Error e) {
            // One taker's bug must not stop the others: that taker stalls and liveness says so.
            LOG.errorf(e, "a taker step failed");
        }
    }

    /**
     * Tells the takers of one topic that wait for a worker slot (their topic's pool was full)
     * that one was freed: set by a waiting taker, reset by the first slot freed after it.
     */
    static final class SlotSignal implements Runnable {
        private final AtomicBoolean armed = new AtomicBoolean();
        private final TakerLoop loop;
        private final List<DueTaker> takers;

        SlotSignal(TakerLoop loop, List<DueTaker> takers) {
            this.loop = loop;
            this.takers = takers;
        }

        /** A taker found no free slot: the next freed slot wakes the topic's waiting takers. */
        void arm() {
            armed.set(true);
        }

        @Override
        public void run() {
            if (armed.get() && armed.compareAndSet(true, false)) {
                loop.post(() -> takers.forEach(DueTaker::slotFreed));
            }
        }
    }
}
