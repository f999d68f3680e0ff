package io.delayq.dispatch;

import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

import org.jboss.logging.Logger;

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
 * At most {@value #MAX_TAKES_IN_FLIGHT} takes are in flight at once; more partitions due
 * together (a reconnect wakes every taker) queue in arrival order: their takes wait for a reply
 * here instead of in the Redis client's pool, which they would otherwise fill.
 */
final class TakerLoop {
    private static final Logger LOG = Logger.getLogger(TakerLoop.class);
    static final int MAX_TAKES_IN_FLIGHT = 64;
    private static final long SPIN_NANOS = 100_000;

    /** A taker's timer; a taker holds at most one (a new plan cancels the old), so there are no more than takers. */
    record Timer(long atNanos, long seq, DueTaker taker) {
    }

    private final ConcurrentLinkedQueue<Runnable> inbox = new ConcurrentLinkedQueue<>();
    private final TreeSet<Timer> timers = new TreeSet<>(
            Comparator.comparingLong(Timer::atNanos).thenComparingLong(Timer::seq));
    private long timerSeq;
    private final ArrayDeque<DueTaker> queued = new ArrayDeque<>();
    private final long beatNanos;
    private int takesInFlight;
    private volatile boolean running;
    private volatile Thread thread;
    private volatile long lastBeatNanos = System.nanoTime();

    TakerLoop(long beatMs) {
        this.beatNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(10, beatMs));
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
            queued.clear();
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
     * A permit for one take; false when {@value #MAX_TAKES_IN_FLIGHT} are in flight or others
     * wait before it (the taker is queued, in arrival order). A queued taker is handed its permit
     * when one is given back ({@link #passTurn}); it uses it on its next call here.
     */
    boolean acquireTake(DueTaker taker) {
        if (taker.useGrant()) {
            return true;
        }
        if (takesInFlight < MAX_TAKES_IN_FLIGHT && queued.isEmpty()) {
            takesInFlight++;
            return true;
        }
        queued.add(taker); // it calls here again only with the permit it is handed
        return false;
    }

    /** Gives back a take's permit (also one granted and not used); the first queued taker gets it. */
    void releaseTake() {
        takesInFlight--;
        passTurn();
    }

    /**
     * Hands free permits to the queued takers, first come first served: a permit given back goes
     * to the head of the queue, not to whichever taker asks next (a busy partition taking full
     * batches back to back would otherwise keep the queued ones waiting for good).
     */
    private void passTurn() {
        while (takesInFlight < MAX_TAKES_IN_FLIGHT) {
            DueTaker next = queued.poll();
            if (next == null) {
                return;
            }
            takesInFlight++;
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
