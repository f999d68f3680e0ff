package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import org.jboss.logging.Logger;

import io.delayq.ops.DelayqMetrics;
import io.delayq.store.JobQueue;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.store.RedisClock;
import io.delayq.store.RedisReplyException;
import io.delayq.store.StoreUnavailableException;
import io.delayq.store.TakeResult;
import io.delayq.store.TakenJob;
import io.vertx.core.AsyncResult;
import io.vertx.core.Future;

/**
 * Takes the due jobs of one topic partition. It is a state machine run by the replica's
 * {@link TakerLoop} (one thread for every partition), not a thread of its own: it sleeps until
 * the earliest due time it knows, and takes then; {@link #wake(long)} (a wake-up message: an
 * earlier job was enqueued on some replica) cuts the sleep short. Pub/sub is fire-and-forget, so
 * the replica's {@link SafetyNetPoll} also reads every partition's earliest due time about once a
 * second and wakes a taker that missed a message.
 * <p>
 * States: {@code SLEEPING} (a timer at the earliest due time, or none), {@code WAITING_FOR_SLOTS}
 * (its topic's worker pool is full; a freed slot or the safety-net interval ends it),
 * {@code QUEUED} (for a take permit of the loop), {@code TAKING} (a take in flight),
 * {@code BACKING_OFF} (after a failed take), {@code STOPPED}. Every field but {@link #wakeFor}
 * and {@link #running} belongs to the loop thread.
 */
final class DueTaker {
    private static final Logger LOG = Logger.getLogger(DueTaker.class);
    private static final long NONE = Long.MAX_VALUE;
    private static final int MAX_UNCERTAIN = 1000;

    private enum State {
        NEW, SLEEPING, WAITING_FOR_SLOTS, QUEUED, TAKING, BACKING_OFF, STOPPED
    }

    private final Partition partition;
    private final WorkerPool pool;
    private final TakerLoop.SlotSignal slots;
    private final TakerLoop loop;
    private final JobQueue store;
    /** The replica's Redis clock (lateness, the safety net), fed by every taker. */
    private final RedisClock clock;
    /**
     * This partition's own: on a Redis Cluster each master has its own TIME, and the take's
     * deadline and the sleep until the next due job must be in the time of the master that runs them.
     */
    private final RedisClock partitionClock;
    private final Acker acker;
    private final DelayqMetrics metrics;
    private final String replicaId;
    private final int maxBatch;
    private final long leaseMs;
    private final long safetyNetMs;
    private final long minGapMs;
    private final long takeDeadlineMs;
    /**
     * A taken job is started only while its lease is younger than this: half of lease − heartbeat,
     * so that the heartbeat's first extend (up to a heartbeat after the start) comes well within
     * the lease (the bound ReclaimGate calls a slow call).
     */
    private final long startableLeaseAgeMs;
    private long calls;
    private final Set<Integer> olderDays = new TreeSet<>();
    /** Token prefixes of takes whose outcome is unknown (failed without a reply). */
    private final List<String> uncertain = new ArrayList<>();
    private boolean releasing;

    private State state = State.NEW;
    /** Redis time the taker sleeps until (NONE: until woken). */
    private long sleepUntil = NONE;
    /**
     * The end of the topic's hold (its HTTP target's Retry-After) as the last take told it, Redis
     * ms; 0 = none. No wake-up takes before it: the take would lease nothing.
     */
    private long heldUntil;
    /** The current timer (one at most), null when none. */
    private TakerLoop.Timer timer;
    private long failures;
    private volatile boolean running = true;
    /** A take permit the loop handed this taker while it was queued, not used yet; loop thread only. */
    private boolean granted;
    /** The node whose take permit this taker holds or was granted (set by the loop); loop thread only. */
    String permitNode = "";
    /**
     * Set while the taker sleeps because the topic's concurrency cap held its last take back; a job
     * of this partition ending here then wakes it at once, and its take carries that job's ack (one
     * script frees the slot and fills it). Any thread.
     */
    private volatile boolean cappedWait;
    /** Earliest Redis-time due the taker must wake for; lowered by wake-ups (any thread). */
    private final AtomicLong wakeFor = new AtomicLong(NONE);
    /** Set when the taker entered a state whose progress it must show itself (a take, a queue). */
    private volatile long busySinceNanos;
    private volatile boolean busy;

    DueTaker(Partition partition, WorkerPool pool, TakerLoop loop, TakerLoop.SlotSignal slots, JobQueue store,
            RedisClock clock, Acker acker, DelayqMetrics metrics, String replicaId, int maxBatch, long leaseMs,
            long heartbeatMs, long safetyNetMs, long minGapMs, long redisTimeoutMs) {
        this.minGapMs = minGapMs;
        this.startableLeaseAgeMs = Math.max(1, (leaseMs - heartbeatMs) / 2);
        this.takeDeadlineMs = redisTimeoutMs / 2;
        this.acker = acker;
        this.metrics = metrics;
        this.partition = partition;
        this.pool = pool;
        this.loop = loop;
        this.slots = slots;
        this.store = store;
        this.clock = clock;
        this.partitionClock = new RedisClock(clock::monotonicNanos);
        this.replicaId = replicaId;
        this.maxBatch = maxBatch;
        this.leaseMs = leaseMs;
        this.safetyNetMs = safetyNetMs;
    }

    Partition partition() {
        return partition;
    }

    /** The cancel of job {@code id} under lease {@code token} (cancel.lua's message): its attempt ends, if it runs here. Any thread. */
    void cancel(String token, String id) {
        pool.cancel(partition, id, token);
    }

    /** A job due at {@code dueRedisMs} was scheduled: wake up if that is earlier than planned. Any thread. */
    void wake(long dueRedisMs) {
        long current;
        do {
            current = wakeFor.get();
            if (dueRedisMs >= current) {
                return;
            }
        } while (!wakeFor.compareAndSet(current, dueRedisMs));
        loop.post(this::woken);
    }

    /**
     * A job of this partition ended on this replica (its slot is free, its ack queued or its
     * outcome written): while the concurrency cap holds this taker back, it takes now, without
     * waiting for the ack's flush and the wake-up it publishes. Any thread; nothing for a taker
     * the cap does not hold back.
     */
    void jobFinished() {
        if (cappedWait) {
            cappedWait = false;
            wake(Long.MIN_VALUE);
        }
    }

    /** Nanos since the taker last made progress (for the liveness check). */
    long stalledNanos() {
        if (!running) {
            return 0;
        }
        // Asleep or waiting, a taker is as alive as the loop that would wake it.
        return System.nanoTime() - (busy ? busySinceNanos : loop.lastBeatNanos());
    }

    boolean isRunning() {
        return running && loop.alive();
    }

    // ------------------------------------------------------------ loop thread only

    /** The first take, at start: the taker knows no due time yet. */
    void begin() {
        if (state == State.NEW) {
            takeNow();
        }
    }

    /**
     * Stops taking: a take in flight completes (its jobs start) and then the taker stops. The
     * jobs of takes whose reply was lost are put back by {@link #releaseUncertain()} after the loop ended.
     */
    void end() {
        running = false;
        cancelTimer();
        if (state != State.TAKING) {
            state = State.STOPPED;
            busy = false;
        }
    }

    void onTimer(TakerLoop.Timer fired) {
        if (fired != timer) {
            return; // a timer replaced by a later plan
        }
        timer = null;
        switch (state) {
            case SLEEPING -> sleep();
            case WAITING_FOR_SLOTS, BACKING_OFF -> takeNow();
            default -> {
            }
        }
    }

    private void woken() {
        if (state == State.SLEEPING) {
            sleep(); // earlier than planned: a new timer (or a take at once)
        }
    }

    void slotFreed() {
        if (state == State.WAITING_FOR_SLOTS) {
            takeNow();
        }
    }

    /** Its turn came: a take permit was granted to it. */
    void dequeued() {
        if (state == State.QUEUED) {
            takeNow(); // uses the permit, or gives it back when its pool has no free slot
        } else {
            returnGrant(); // meant for a taker stopped meanwhile: the next one gets it
        }
    }

    /** The loop handed this queued taker a take permit. */
    void grant() {
        granted = true;
    }

    /** Uses a permit granted while queued; false when none was. */
    boolean useGrant() {
        if (granted) {
            granted = false;
            return true;
        }
        return false;
    }

    /** A granted permit this taker cannot use goes back to the loop (and so to the next queued taker). */
    private void returnGrant() {
        if (granted) {
            granted = false;
            loop.releaseTake(permitNode);
        }
    }

    /** Sleeps until {@link #sleepUntil} or an earlier wake-up, whichever is first; takes when that has passed. */
    private void sleep() {
        long target = Math.min(sleepUntil, wakeFor.get());
        if (target != NONE && target < heldUntil) {
            // An enqueue's wake-up (or the safety-net poll's) during a hold: its take would lease
            // nothing, so the taker keeps sleeping until the hold ends.
            target = heldUntil;
        }
        if (target <= partitionClock.redisNow()) {
            takeNow();
            return;
        }
        state = State.SLEEPING;
        busy = false;
        long at = target == NONE ? 0 : partitionClock.nanosAt(target);
        if (timer != null && target != NONE && timer.atNanos() == at) {
            return; // the plan stands (a safety-net poll told what the last take said)
        }
        cancelTimer();
        if (target != NONE) {
            timer = loop.at(at, this);
        }
    }

    private void cancelTimer() {
        loop.cancel(timer);
        timer = null;
    }

    private void timerIn(long ms) {
        cancelTimer();
        timer = loop.at(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms), this);
    }

    private void takeNow() {
        if (!running) {
            returnGrant();
            state = State.STOPPED;
            busy = false;
            return;
        }
        // The node this take goes to (that of the permit granted while queued, if any): a take
        // reserves its topic's free worker slots until its reply, so on a node that hangs it would
        // hold them for the Redis timeout; takes to one node may reserve only that node's share.
        String node = granted ? permitNode : loop.nodeOf(this);
        int cap = Math.min(maxBatch, loop.slotShare(pool, node));
        int want = cap == 0 ? 0 : pool.reserve(cap);
        if (want == 0) {
            // Its pool is full (other partitions of the topic share it), or this node's share is
            // in use: the next slot freed ends the wait; the timer stands in for a signal that
            // crossed this check.
            slots.arm();
            want = cap == 0 ? 0 : pool.reserve(cap);
            if (want == 0) {
                returnGrant();
                state = State.WAITING_FOR_SLOTS;
                busy = false;
                timerIn(safetyNetMs);
                return;
            }
        }
        cancelTimer();
        if (!loop.acquireTake(this, node)) {
            pool.release(want);
            state = State.QUEUED;
            // Waiting for its turn is not a stall: a queue behind takes that wait for a slow Redis
            // can be long, and liveness must not restart a pod for Redis' sake. The queue moves
            // whenever a take ends, and the loop's own heartbeat shows the loop is alive.
            busy = false;
            return;
        }
        state = State.TAKING;
        cappedWait = false;
        loop.slotsReserved(pool, permitNode, want);
        markBusy();
        wakeFor.set(NONE);
        long t0 = clock.monotonicNanos();
        List<Lease> acks = acker.drain(partition, 1000);
        String tokenPrefix = replicaId + ":" + ++calls + ":";
        int reserved = want;
        // A take that Redis runs after this deadline (its reply would find nobody waiting for it)
        // leases nothing: half the Redis timeout, in Redis time.
        Future<TakeResult> take;
        try {
            take = store.takeAsync(partition, want, leaseMs, tokenPrefix, olderDays, acks, deadline());
        } catch (RuntimeException e) {
            take = Future.failedFuture(e);
        }
        take.onComplete(done -> {
            long t1 = clock.monotonicNanos();
            loop.post(() -> taken(done, reserved, acks, tokenPrefix, t0, t1));
        });
    }

    /**
     * The take's deadline in Redis time. Until a take of this partition has told its master's
     * time, this partition's clock is only the host's ({@link RedisClock} starts from it), which
     * may be off by any amount: a host clock ahead would make the deadline pass before Redis even
     * runs the take (nothing taken, the start's jobs late by a back-off), one behind would let a
     * take that Redis runs late lease jobs to nobody. So the
     * replica's Redis clock stands in when some other take has sampled it (masters' clocks differ
     * by NTP's milliseconds, not the deadline's seconds), and the very first takes go without a
     * deadline (0): their reply, if late, has its jobs put back (the store's late-reply handler),
     * and one lost for good is put back by the uncertain-take release.
     */
    private long deadline() {
        if (partitionClock.sampled()) {
            return partitionClock.redisNow() + takeDeadlineMs;
        }
        return clock.sampled() ? clock.redisNow() + takeDeadlineMs : 0;
    }

    private void markBusy() {
        busySinceNanos = System.nanoTime();
        busy = true;
    }

    private void taken(AsyncResult<TakeResult> done, int want, List<Lease> acks, String tokenPrefix, long t0, long t1) {
        String node = permitNode;
        loop.slotsReserved(pool, node, -want);
        loop.releaseTake(node);
        if (done.succeeded()) {
            loop.answered(node);
        } else if (done.cause() instanceof StoreUnavailableException u && u.getCause() instanceof TimeoutException) {
            // The node did not answer at all (hung, not down): its next takes would each hold a
            // Redis connection for the whole timeout. One at a time until it answers again.
            loop.nodeSilent(node);
        }
        if (done.failed()) {
            acker.restore(partition, acks);
            pool.release(want);
            Throwable e = done.cause();
            if (e instanceof StoreUnavailableException && uncertain.size() < MAX_UNCERTAIN) {
                // Redis may have run it and the reply was lost (connection closed, Redis
                // killed after the write): its jobs would be leased to nobody until the
                // lease expires, an attempt lost. Put them back once Redis answers. (Past
                // the bound, a long outage's takes are left to the lease expiry.)
                uncertain.add(tokenPrefix);
            }
            if (e instanceof RedisReplyException) {
                LOG.errorf(e, "take on %s failed", partition);
                failures++;
            } else if (failures++ == 0) {
                LOG.warnf("take on %s failed, retrying: %s", partition, e.toString());
            }
            backOff();
            return;
        }
        TakeResult r = done.result();
        acker.confirm(partition, acks); // the carried acks are in Redis: their leases need no more extending
        pool.release(want - r.jobs().size());
        // How old the leases are now: Redis ran the take at r.now(), read against this partition's
        // clock before this reply moves it (not the round trip: a slow request leg leaves the
        // leases fresh), or, before the first sample, the time since the take was sent.
        long leaseAgeMs = partitionClock.sampled() ? partitionClock.redisNow() - r.now()
                : (clock.monotonicNanos() - t0) / 1_000_000;
        List<TakenJob> toStart = r.jobs();
        if (!toStart.isEmpty() && leaseAgeMs >= startableLeaseAgeMs) {
            toStart = putBackLate(r.jobs(), leaseAgeMs, tokenPrefix);
        }
        metrics.took(partition.topic(), t1 - t0);
        Acker.reportStale(partition, r.staleAcks());
        if (t1 - t0 <= takeDeadlineMs * 1_000_000L) {
            // A slower round trip (a freeze with the reply unread) would place Redis' time far off.
            clock.observe(r.now(), t0, t1);
            partitionClock.observe(r.now(), t0, t1);
        }
        failures = 0;
        heldUntil = r.heldUntil();
        if (!toStart.isEmpty()) {
            pool.start(toStart); // also when stopping: a take in progress has its jobs started
        }
        if (!uncertain.isEmpty()) {
            releaseUncertainAsync();
        }
        if (!running) {
            state = State.STOPPED;
            busy = false;
            return;
        }
        if (r.paused()) {
            // Nothing is taken until the topic is resumed, which publishes a wake-up (the
            // safety-net poll stands in for a lost one): no take before, however many are due.
            sleepUntil = NONE;
            sleep();
            return;
        }
        if (r.capped()) {
            // The topic's concurrency cap has no slot for this partition while jobs are due: the
            // step that frees one (an ack, a failure, a snooze, a reclaim, a drain's put-back, on
            // any replica) publishes a wake-up, and a job of the partition that ends here wakes
            // this taker directly (jobFinished): no take before, however many are due.
            sleepUntil = NONE;
            cappedWait = true;
            sleep();
            return;
        }
        if (r.jobs().size() == want && r.notBefore() == 0) {
            takeNow(); // there may be more due right now
            return;
        }
        // Under a steady stream the next job is due within this take's round trip, and a
        // take right away would find only the one or two jobs that fell due meanwhile.
        // Waiting until minGap after this take's start batches them: each take and ack
        // costs Redis the same whether it moves one job or fifty, for <= minGap lateness.
        // A rate limit that held the take back says when it lets the next jobs go.
        sleepUntil = r.nextDue() < 0 ? NONE : Math.max(Math.max(r.nextDue(), r.notBefore()), r.now() + minGapMs);
        sleep();
    }

    private void backOff() {
        if (!running) {
            state = State.STOPPED;
            busy = false;
            return;
        }
        state = State.BACKING_OFF;
        busy = false;
        timerIn(Math.min(safetyNetMs, 50L << Math.min(failures, 6)));
    }

    /** Puts back the jobs of takes whose reply was lost; kept for the next take if Redis fails again. */
    private void releaseUncertainAsync() {
        if (releasing) {
            return;
        }
        releasing = true;
        List<String> prefixes = List.copyOf(uncertain);
        release(prefixes).onComplete(done -> loop.post(() -> {
            releasing = false;
            if (done.succeeded()) {
                uncertain.removeAll(prefixes);
            }
        }));
    }

    /**
     * A take whose reply was read only when its leases were {@code leaseAgeMs} old (this replica was
     * frozen, or stalled, with it unread): the leases may have expired and the jobs been reclaimed
     * and run elsewhere, or expire before the heartbeat extends them, and starting them would run a
     * job twice at once (and two of a group, past a cap). None is started, except a job whose
     * attempt under an earlier lease still runs here (the pool attaches the new lease to it and runs
     * nothing: handing it to another replica would run it beside that attempt). The others are put
     * back at once, due now, if their lease is still ours (requeue checks the token: one reclaimed
     * or taken again meanwhile is left to its new holder); if Redis does not answer, as a lost
     * reply's are. Returns the jobs to hand to the pool.
     */
    private List<TakenJob> putBackLate(List<TakenJob> jobs, long leaseAgeMs, String tokenPrefix) {
        List<TakenJob> attach = new ArrayList<>();
        List<Lease> back = new ArrayList<>();
        for (TakenJob job : jobs) {
            if (pool.runsHere(job)) {
                attach.add(job);
            } else {
                back.add(job.lease());
            }
        }
        pool.release(back.size());
        LOG.warnf("take on %s read when its leases were %d ms old (lease %d ms): %d job(s) not started, put back if still "
                + "ours", partition, leaseAgeMs, leaseMs, back.size());
        if (!back.isEmpty()) {
            Future<Integer> requeue;
            try {
                requeue = store.requeueAsync(partition, back);
            } catch (RuntimeException e) {
                requeue = Future.failedFuture(e);
            }
            requeue.onFailure(e -> loop.post(() -> {
                if (uncertain.size() < MAX_UNCERTAIN) {
                    uncertain.add(tokenPrefix);
                }
            }));
        }
        return attach;
    }

    /**
     * After the loop ended (drain): puts back the jobs of takes whose reply was lost, if Redis
     * answers. Asynchronous, so that the drain sends every partition's at once and waits for them
     * within its deadline; the future never fails.
     */
    Future<Void> releaseUncertain() {
        if (uncertain.isEmpty()) {
            return Future.succeededFuture();
        }
        return release(List.copyOf(uncertain)).<Void> mapEmpty().otherwise((Void) null);
    }

    /** One put-back of the given takes' jobs, logged either way. */
    private Future<Integer> release(List<String> prefixes) {
        Future<Integer> release;
        try {
            release = store.releaseTakesAsync(partition, prefixes);
        } catch (RuntimeException e) {
            release = Future.failedFuture(e);
        }
        return release.onSuccess(back -> {
            if (back > 0) {
                LOG.infof("put back %d job(s) of %d take(s) on %s whose reply was lost", back, prefixes.size(), partition);
            }
        }).onFailure(e -> LOG.debugf("could not yet put back the jobs of takes on %s whose reply was lost: %s", partition,
                e.toString()));
    }
}
