package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.core.JobValidator;
import io.delayq.ops.DelayqMetrics;
import io.delayq.store.JobQueue;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.store.RedisClock;
import io.delayq.store.RedisGateway;
import io.delayq.store.RedisNodes;
import io.delayq.store.StoreUnavailableException;
import io.delayq.store.TakenJob;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;

/**
 * Starts and stops the dispatch machinery of this replica: a worker pool per served topic, a
 * {@link DueTaker} per served partition (all driven by one {@link TakerLoop} thread, however
 * many partitions), the {@link WakeUps} subscription and the {@link Acker}.
 */
@ApplicationScoped
public class Dispatcher {
    private static final Logger LOG = Logger.getLogger(Dispatcher.class);
    private final LeaseReclaimer reclaimer;
    private final LeaseHeartbeat heartbeat;
    private final ReclaimGate gate;
    private static final int MAX_BATCH = 1000;

    private final DelayqConfig config;
    private final TopicRegistry topics;
    private final JobQueue store;
    private final RedisGateway redis;
    private final RedisClock clock;
    private final JobRunner runner;
    private final Acker acker;
    private final RetryPolicy retry;
    private final DelayqMetrics metrics;
    private final RedisNodes nodes;
    private final String replicaId = JobValidator.newId().substring(0, 8);

    private final Map<String, WorkerPool> pools = new LinkedHashMap<>();
    private final List<DueTaker> takers = new ArrayList<>();
    private ExecutorService workers;
    private TakerLoop loop;
    private WakeUps wakeUps;
    private SafetyNetPoll safetyNet;
    private volatile boolean started;
    private volatile boolean draining;
    /** Test seam: runs just before the drain reads which jobs still run (DrainOrderTest). */
    private volatile Runnable beforeRequeueSnapshot = () -> {
    };

    public Dispatcher(DelayqConfig config, TopicRegistry topics, JobQueue store, RedisGateway redis,
            RedisClock clock, JobRunner runner, Acker acker, RetryPolicy retry, DelayqMetrics metrics,
            LeaseReclaimer reclaimer, LeaseHeartbeat heartbeat, ReclaimGate gate, RedisNodes nodes) {
        this.reclaimer = reclaimer;
        this.heartbeat = heartbeat;
        this.gate = gate;
        this.nodes = nodes;
        this.metrics = metrics;
        this.config = config;
        this.topics = topics;
        this.store = store;
        this.redis = redis;
        this.clock = clock;
        this.runner = runner;
        this.acker = acker;
        this.retry = retry;
    }

    /**
     * Settings that make the start fail are checked before any observer of the start event (the
     * schedules' ticker, the callbacks' sender...) has started a thread: a start that fails fires no
     * shutdown event, and in dev mode such threads would run on after it, one set per failed reload.
     */
    void checkSettings(@Observes @Priority(1) StartupEvent event) {
        checkLeaseAndHeartbeat(config.dispatch().lease(), config.dispatch().heartbeat());
        if (config.partitions() < 1 || config.partitions() > 1024) {
            throw new IllegalStateException("delayq.partitions must be between 1 and 1024, not " + config.partitions());
        }
        config.topics().forEach((topic, t) -> t.http().url()
                .ifPresent(url -> TopicRegistry.maxRetryAfter(topic, t.http().maxRetryAfter(), config.horizon())));
    }

    void onStart(@Observes StartupEvent event) {
        try {
            store.checkPartitions(config.partitions());
        } catch (StoreUnavailableException e) {
            // Redis away at start-up is not a reason to crash-loop: readiness stays DOWN until it
            // answers, and the takers retry. The check runs at the next start.
            LOG.warnf("could not check delayq.partitions against the store: %s", e.getMessage());
        }
        start();
    }

    /**
     * A heartbeat at or past the lease lets every lease expire while its job runs: another
     * replica would run the job again, every time. Refuse to start instead.
     */
    static void checkLeaseAndHeartbeat(java.time.Duration lease, java.time.Duration heartbeat) {
        if (heartbeat.compareTo(lease) >= 0) {
            throw new IllegalStateException("delayq.dispatch.heartbeat (" + heartbeat + ") must be shorter than "
                    + "delayq.dispatch.lease (" + lease + "), a third of it or less: leases would expire while "
                    + "their jobs run, and other replicas would run them again");
        }
    }

    synchronized void start() {
        if (started) {
            return;
        }
        if (!config.dispatch().enabled() || topics.handlers().isEmpty()) {
            LOG.infof("delayq replica %s serves no topic (%s)", replicaId,
                    config.dispatch().enabled() ? "no @JobTopic observer or HTTP target" : "delayq.dispatch.enabled=false");
            started = true;
            return;
        }
        // Virtual threads: a blocking observer holds no platform thread, so concurrency is a
        // per-topic setting rather than a thread-pool size.
        workers = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("delayq-job-", 0).factory());
        Map<String, DueTaker> byChannel = new HashMap<>();
        long leaseMs = config.dispatch().lease().toMillis();
        long safetyNetMs = config.dispatch().safetyNet().toMillis();
        loop = new TakerLoop(safetyNetMs, takesPerNode());
        topics.handlers().forEach((topic, handler) -> {
            WorkerPool pool = new WorkerPool(retry.concurrency(topic), workers, runner);
            pools.put(topic, pool);
            List<DueTaker> ofTopic = new ArrayList<>();
            TakerLoop.SlotSignal slots = new TakerLoop.SlotSignal(loop, ofTopic);
            pool.onSlotFreed(slots);
            pool.onJobFinished(p -> ofTopic.get(p.index()).jobFinished());
            for (Partition p : store.partitionsOf(topic)) {
                DueTaker taker = new DueTaker(p, pool, loop, slots, store, clock, acker, metrics, replicaId, MAX_BATCH,
                        leaseMs, config.dispatch().heartbeat().toMillis(), safetyNetMs, config.dispatch().takeGap().toMillis(),
                        config.redisTimeout().toMillis());
                takers.add(taker);
                ofTopic.add(taker);
                byChannel.put(store.wakeChannel(p), taker);
            }
            LOG.infof("delayq replica %s serves topic %s: %s, concurrency %d", replicaId, topic, handler.describe(),
                    pool.concurrency());
        });
        acker.start();
        wakeUps = new WakeUps(redis, byChannel, nodes, loop, config.redisTimeout().toMillis());
        loop.nodes(wakeUps::nodeOf, wakeUps::nodeCount);
        wakeUps.start();
        loop.start(takers);
        heartbeat.start();
        safetyNet = new SafetyNetPoll(store, takers, safetyNetMs, clock, gate, reclaimer::reclaimSoon);
        safetyNet.onRecovered(wakeUps::recovered);
        safetyNet.start();
        started = true;
    }

    /**
     * Take permits per Redis node: on a cluster a quarter of the Redis pool (each request holds a
     * pooled connection to every node until its reply, so a hung node's takes must leave most of
     * the pool to the others); a single Redis keeps {@link TakerLoop#MAX_TAKES_IN_FLIGHT}.
     */
    private int takesPerNode() {
        if (!redis.cluster()) {
            return TakerLoop.MAX_TAKES_IN_FLIGHT;
        }
        int pool = org.eclipse.microprofile.config.ConfigProvider.getConfig()
                .getOptionalValue("quarkus.redis.max-pool-size", Integer.class).orElse(16);
        return Math.max(2, pool / 4);
    }

    /**
     * Graceful drain, in this order (Sidekiq's "quiet, stop with deadline, put unfinished work back":
     * it is worse to lose a job than to run it twice):
     * <ol>
     * <li>readiness is already DOWN: Quarkus' shutdown delay ran before this event, so Kubernetes
     * stopped routing requests to this pod;</li>
     * <li>takers stop taking (a take in flight completes and its jobs start);</li>
     * <li>running jobs get until {@code delayq.drain.timeout} to finish;</li>
     * <li>jobs still running then are put back into the shard of now, due at once, with one script
     * per partition, and a wake-up tells the other replicas to take them right away (instead of
     * waiting for the lease to expire). Their observers may still finish here; their late acks
     * are ignored by the lease-token check;</li>
     * <li>the acks of every job that finished are flushed.</li>
     * </ol>
     */
    void onStop(@Observes @Priority(1) ShutdownEvent event) {
        drain();
    }

    synchronized void drain() {
        if (!started || draining) {
            return;
        }
        draining = true;
        long deadline = System.nanoTime() + config.drain().timeout().toNanos();
        try {
            // Takes in flight complete and their jobs start; then the loop ends. The jobs of takes
            // whose reply was lost go back, every partition's at once, within the deadline.
            if (loop != null && loop.stop(takers, Math.max(1000, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())))) {
                List<io.vertx.core.Future<Void>> releases = takers.stream().map(DueTaker::releaseUncertain).toList();
                try {
                    io.vertx.core.Future.join(releases).toCompletionStage().toCompletableFuture()
                            .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                    LOG.debugf("the jobs of takes whose reply was lost were not all put back: %s", e.toString());
                }
            }
            if (wakeUps != null) {
                wakeUps.stop();
            }
            if (safetyNet != null) {
                safetyNet.stop();
            }
            boolean idle = true;
            for (WorkerPool pool : pools.values()) {
                idle &= pool.awaitIdle(deadline);
            }
            // Put back what still runs before the acker's last flush: a job that completes after
            // that flush would otherwise be neither acked nor put back (its lease would expire
            // and cost it an attempt). One that completes during the requeue is put back and
            // runs again elsewhere; its ack then meets another lease and is ignored.
            if (!idle) {
                beforeRequeueSnapshot.run();
                requeueRunning();
            }
            acker.stop(Math.max(deadline, System.nanoTime() + TimeUnit.SECONDS.toNanos(2)));
            LOG.infof("delayq replica %s drained", replicaId);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            requeueRunning();
        } finally {
            // Last: until every ack is in Redis (or the acker gave up) the leases are still ours.
            heartbeat.stop();
            if (workers != null) {
                workers.shutdownNow();
            }
        }
    }

    /** Test seam: {@code hook} runs in the drain just before it reads which jobs still run. */
    void beforeRequeueSnapshot(Runnable hook) {
        this.beforeRequeueSnapshot = hook;
    }

    private void requeueRunning() {
        Map<Partition, List<Lease>> byPartition = new HashMap<>();
        for (WorkerPool pool : pools.values()) {
            for (TakenJob job : pool.running().values()) {
                byPartition.computeIfAbsent(job.partition(), p -> new ArrayList<>()).add(job.lease());
            }
        }
        // Every partition's at once: on a cluster, partitions of a hung master must not hold back
        // the put-back of the others (theirs would wait for their leases and come back as lost).
        List<io.vertx.core.Future<Integer>> sent = new ArrayList<>();
        byPartition.forEach((p, leases) -> {
            io.vertx.core.Future<Integer> back;
            try {
                back = store.requeueAsync(p, leases);
            } catch (RuntimeException e) {
                back = io.vertx.core.Future.failedFuture(e);
            }
            sent.add(back.onSuccess(n -> LOG.infof("drain: put %d unfinished job(s) of %s back, due now", n, p))
                    .onFailure(e -> LOG.warnf("drain: could not put %d job(s) of %s back (%s); they return when their"
                            + " lease expires", leases.size(), p, e.toString())));
        });
        try {
            io.vertx.core.Future.join(sent).toCompletionStage().toCompletableFuture()
                    .get(config.redisTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            LOG.debugf("drain: not every put-back answered: %s", e.toString());
        }
    }

    /**
     * The lease tokens this replica holds in a partition: its running jobs' (and those waiting for
     * an earlier attempt) and its finished jobs' whose ack is not in Redis yet. A reclaim leaves
     * these alone, and only these: an expired lease of this replica's that it no longer holds (an
     * outcome it could not record) is reclaimed like anyone's.
     */
    java.util.Set<String> heldTokens(Partition p) {
        java.util.Set<String> out = new java.util.HashSet<>();
        WorkerPool pool = pools.get(p.topic());
        if (pool != null) {
            pool.running().values().forEach(t -> {
                if (t.partition().equals(p)) {
                    out.add(t.lease().token());
                }
            });
        }
        acker.forEachUnconfirmed((q, l) -> {
            if (q.equals(p)) {
                out.add(l.token());
            }
        });
        return out;
    }

    public boolean started() {
        return started;
    }

    /** True while this replica takes jobs: started with at least one taker, not draining. */
    public boolean taking() {
        return started && !draining && !takers.isEmpty();
    }

    public boolean draining() {
        return draining;
    }

    /** Whether the wake-up subscription is up (true when there is nothing to subscribe to). */
    public boolean wakeUpsConnected() {
        return wakeUps == null || takers.isEmpty() || wakeUps.subscribed();
    }

    /** The longest time any taker has gone without progress, in nanos (0 when none runs). */
    public long longestStallNanos() {
        long worst = 0;
        for (DueTaker t : takers) {
            worst = Math.max(worst, t.isRunning() || draining ? t.stalledNanos() : Long.MAX_VALUE);
        }
        return worst;
    }

    Collection<WorkerPool> pools() {
        return pools.values();
    }

    /** A job's cancel reached this replica: ends its attempt under lease {@code token} here, if one runs. */
    boolean cancel(Partition p, String id, String token) {
        WorkerPool pool = pools.get(p.topic());
        return pool != null && pool.cancel(p, id, token);
    }

    /** Partitions this replica takes from. */
    public List<Partition> partitions() {
        List<Partition> out = new ArrayList<>(takers.size());
        takers.forEach(t -> out.add(t.partition()));
        return out;
    }

    /** Jobs running on this replica, per topic. */
    public Map<String, Integer> runningByTopic() {
        Map<String, Integer> out = new HashMap<>();
        pools.forEach((topic, pool) -> out.put(topic, pool.running().size()));
        return out;
    }

    public String replicaId() {
        return replicaId;
    }
}
