package io.delayq.store;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.core.CancelOutcome;
import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.vertx.core.Future;
import io.delayq.core.RescheduleResult;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * Java side of the Redis layout: one method per operation, each one script (or one read).
 * Only this package knows key names (see {@link Keys}) and the scripts' argument order.
 */
@ApplicationScoped
public class JobStore {
    private static final Logger LOG = Logger.getLogger(JobStore.class);
    private static final long DAY_MS = 86_400_000L;
    private final RedisGateway redis;
    private final Scripts scripts;
    private final Keys keys;
    private final int partitions;
    private final boolean cluster;
    private final java.util.concurrent.atomic.AtomicBoolean layoutCheck = new java.util.concurrent.atomic.AtomicBoolean();
    private final int durableReplicas;
    private final long durableWaitMs;
    /**
     * When (monotonic ns) each of this replica's own topics was last written to the topics SET:
     * its enqueues skip the SADD for {@link #LISTED_TRUST_NANOS} after. Other topics are not
     * remembered (any name can come in a request): their enqueues send the SADD with the script.
     */
    private final Map<String, Long> listedAt = new ConcurrentHashMap<>();
    private final OwnTopics remembered;
    /**
     * How long a replica trusts that a topic it listed is still listed: a topic forgotten meanwhile
     * is listed again by its first enqueue, which finds the partition's "forgotten" mark, kept
     * twice as long ({@link #FORGOTTEN_MARK_MS}).
     */
    private static final long LISTED_TRUST_NANOS = 3_600_000_000_000L;
    private static final long FORGOTTEN_MARK_MS = 2 * 3_600_000L;
    /** Test seam: told "marked", "unlisted" and "cleared" as a forget passes those steps (ForgetTopicTest). */
    private volatile Consumer<String> forgetProbe = step -> {
    };
    /** Dedup window ms of the topics that set one ({@code delayq.topics.<t>.dedup-window}). */
    private final Map<String, Long> dedupWindows = new HashMap<>();
    /** Rate limit in jobs/s of the topics that configure one ({@code delayq.topics.<t>.rate-limit}). */
    private final Map<String, Double> rateLimits = new HashMap<>();
    /** Topics with {@code delayq.topics.<t>.dead-url}: their burials record a dead-job callback. */
    private final Set<String> callbackTopics = new java.util.HashSet<>();
    /** Told of a partition where a burial just recorded a callback (the sender sends it at once). */
    private volatile Consumer<Partition> onCallback = p -> {
    };

    /** A store that remembers every topic it listed (tests build one by hand). */
    public JobStore(RedisGateway redis, Scripts scripts, Keys keys, DelayqConfig config) {
        this(redis, scripts, keys, config, topic -> true);
    }

    @Inject
    public JobStore(RedisGateway redis, Scripts scripts, Keys keys, DelayqConfig config, OwnTopics remembered) {
        this.remembered = remembered;
        this.redis = redis;
        this.scripts = scripts;
        this.keys = keys;
        this.partitions = config.partitions();
        this.durableReplicas = config.durability().replicas();
        this.durableWaitMs = config.durability().timeout().toMillis();
        this.cluster = redis.cluster();
        config.topics().forEach((topic, t) -> t.dedupWindow().filter(w -> w.toMillis() > 0)
                .ifPresent(w -> dedupWindows.put(topic, w.toMillis())));
        config.topics().forEach((topic, t) -> t.deadUrl().ifPresent(u -> callbackTopics.add(topic)));
        config.topics().forEach((topic, t) -> t.rateLimit().ifPresent(r -> {
            if (!(r >= 0.001) || r > 1_000_000) {
                throw new IllegalStateException("delayq.topics." + topic + ".rate-limit must be a number of jobs per"
                        + " second from 0.001 to 1000000, not " + r + " (to stop a topic, pause it: POST /topics/" + topic
                        + "/pause)");
            }
            rateLimits.put(topic, r);
        }));
    }

    /**
     * Waits for one of this store's futures ({@code *Async}): what each blocking method does. Not
     * on an event loop (it throws there).
     */
    public <T> T await(Future<T> future) {
        return redis.await(future);
    }

    /** The topic's dedup window in ms as the scripts take it: 0 = none. */
    private String dedupWindow(String topic) {
        return Long.toString(dedupWindows.getOrDefault(topic, 0L));
    }

    /** The partition that owns a job id: stable across processes (String.hashCode is specified). */
    public Partition partitionOf(String topic, String id) {
        return new Partition(topic, Math.floorMod(id.hashCode(), partitions));
    }

    public List<Partition> partitionsOf(String topic) {
        List<Partition> list = new ArrayList<>(partitions);
        for (int i = 0; i < partitions; i++) {
            list.add(new Partition(topic, i));
        }
        return list;
    }

    /**
     * The wake-up channel of a partition, by the layout known now. (Asked at start-up, after the
     * layout check: if Redis was away then, a store of the older tag rule with several partitions
     * has its wake-ups missed until a restart; the safety-net poll still finds its jobs.)
     */
    public String wakeChannel(Partition p) {
        return keys.wakeChannel(p);
    }

    /** The wake-up channel as the scripts want it: on a cluster, marked sharded (see lib.lua's wake). */
    private String scriptChannel(Partition p) {
        return cluster ? "!" + wakeChannel(p) : wakeChannel(p);
    }

    // ---------------------------------------------------------------- enqueue

    private volatile Consumer<Partition> beforeEnqueue = p -> {
    };

    /**
     * A test seam: {@code hook} runs just before each enqueue script is sent (on the sending
     * thread; it must not wait for Redis' replies on an event loop), so that a test can put the
     * real Redis in a state at that point of a batch; null removes it.
     */
    public void beforeEnqueueScript(Consumer<Partition> hook) {
        beforeEnqueue = hook == null ? p -> {
        } : hook;
    }

    /**
     * Enqueues jobs of one topic partition in one atomic script. Results are in input order;
     * {@link JobInfo#created()} tells new jobs from existing ids. {@code trace} is the compact W3C
     * context of the enqueue (see {@link JobRecord#trace()}), empty when it ran in no trace.
     */
    public List<JobInfo> enqueue(Partition p, List<NewJob> jobs, String trace) {
        return redis.await(enqueueAsync(p, jobs, trace));
    }

    /** As {@link #enqueue}, holding no thread. */
    public Future<List<JobInfo>> enqueueAsync(Partition p, List<NewJob> jobs, String trace) {
        return enqueueScript(p, jobs, trace, "", 0).map(reply -> parseEnqueue(p, jobs, reply));
    }

    /**
     * Fires one tick of a recurring schedule into the partition of its job: enqueues {@code job}
     * (or, when null, records the tick as skipped) unless the schedule already fired or skipped a
     * tick at or after {@code tickMs} into this partition. Every replica may call this for the
     * same tick; one of them enqueues it.
     */
    public TickOutcome tick(Partition p, String schedule, long tickMs, NewJob job) {
        List<NewJob> jobs = job == null ? List.of() : List.of(job);
        Response reply = redis.await(enqueueScript(p, jobs, "", schedule, tickMs));
        long now = reply.get(0).toLong();
        if (reply.size() == 2 && reply.get(1).toInteger() == -1) {
            return new TickOutcome(now, false, null);
        }
        return new TickOutcome(now, true, job == null ? null : parseEnqueue(p, jobs, reply).get(0));
    }

    /** What {@link #tick} did: {@code redisNowMs} is Redis' clock when it ran. */
    public record TickOutcome(long redisNowMs, boolean fired, JobInfo job) {
    }

    /** The enqueue script's call; {@code schedule} non-empty when it fires that schedule's tick. */
    private Future<Response> enqueueScript(Partition p, List<NewJob> jobs, String trace, String schedule, long tickMs) {
        Set<Integer> days = new TreeSet<>();
        long localNow = System.currentTimeMillis();
        List<String> args = new ArrayList<>(6 + jobs.size() * 5);
        args.add(scriptChannel(p));
        args.add(JobRecord.storableTrace(trace));
        args.add(dedupWindow(p.topic()));
        args.add(schedule);
        args.add(Long.toString(tickMs));
        args.add(Integer.toString(jobs.size()));
        for (NewJob job : jobs) {
            if (job.delayed()) {
                aroundDay(days, localNow + job.millis());
            } else {
                days.add(Keys.dayOf(job.millis()));
            }
            args.add(job.id());
            args.add(job.delayed() ? "d" : "a");
            args.add(Long.toString(job.millis()));
            args.add(Integer.toString(job.maxAttempts()));
            args.add(job.payloadJson() == null ? "" : job.payloadJson());
        }
        // One job with neither a dedup window nor a tick (most calls): the script of fewer commands.
        String script = jobs.size() == 1 && schedule.isEmpty() && !dedupWindows.containsKey(p.topic()) ? "enqueue1"
                : "enqueue";
        return listed(p.topic(), () -> {
            beforeEnqueue.accept(p);
            return runAsync(script, p, days, args, durableReplicas, null);
        }).compose(reply -> relistIfForgotten(p.topic(), reply))
                .recover(e -> Future.failedFuture(e instanceof NotReplicatedException n ? notReplicated(n, jobs) : e));
    }

    /**
     * Runs an enqueue with its topic in the topics SET. A topic of this replica's own that it
     * listed lately goes straight to the script; one not listed lately is listed first (so that a
     * listed topic may be empty, but a job never belongs to an unlisted one). Any other topic is
     * listed by every enqueue, its SADD sent beside the script rather than before it: no round
     * trip more, and nothing remembered per name. (dq:topics is not under the partition's hash
     * tag, so it cannot be in the script.)
     */
    private Future<Response> listed(String topic, java.util.function.Supplier<Future<Response>> script) {
        if (!remembered.contains(topic)) {
            Future<Response> listing = sadd(topic);
            // Once the script stored the jobs, a failed SADD (on a cluster, dq:topics' master may be
            // the one that hangs) must not fail the enqueue: it is sent again until it lands.
            return script.get().onSuccess(r -> listing.onFailure(e -> listLater(topic)));
        }
        Long at = listedAt.get(topic);
        if (at != null && System.nanoTime() - at < LISTED_TRUST_NANOS) {
            return script.get();
        }
        long asked = System.nanoTime();
        return sadd(topic).transform(done -> {
            if (done.succeeded()) {
                listedAt.put(topic, asked);
                return script.get();
            }
            if (at != null) {
                // Listed by this replica before (a forget since is caught by the partition's mark
                // inside the script): enqueue, and list again until it lands.
                listLater(topic);
                return script.get();
            }
            // Never listed here: the script is not sent, its jobs are not stored.
            return notSent(done.cause());
        });
    }

    /** Topics whose listing SADD failed after their jobs were stored; sent again until it lands. */
    private final Set<String> toList = ConcurrentHashMap.newKeySet();

    private void listLater(String topic) {
        if (toList.size() >= 1000 || !toList.add(topic)) {
            return;
        }
        Thread.ofVirtual().name("delayq-list-topic").start(() -> {
            try {
                for (int i = 0; i < 600; i++) {
                    try {
                        redis.await(sadd(topic));
                        LOG.debugf("topic %s listed again", topic);
                        return;
                    } catch (RuntimeException e) {
                        Thread.sleep(1000);
                    }
                }
                LOG.warnf("topic %s could not be listed in %s for 10 minutes: it has jobs but GET /topics may not show it",
                        topic, keys.topics());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                toList.remove(topic);
            }
        });
    }

    /**
     * After an enqueue that found its topic forgotten since the partition emptied (its reply ends
     * with "relist", see forget.lua): lists the topic again before the caller answers, whatever
     * this replica believed.
     */
    private Future<Response> relistIfForgotten(String topic, Response reply) {
        if (reply.size() == 0 || !"relist".equals(reply.get(reply.size() - 1).toString())) {
            return Future.succeededFuture(reply);
        }
        listedAt.remove(topic);
        long asked = System.nanoTime();
        return sadd(topic).map(v -> {
            if (remembered.contains(topic)) {
                listedAt.put(topic, asked);
            }
            return reply;
        });
    }

    private Future<Response> sadd(String topic) {
        return redis.sendAsync(Request.cmd(Command.SADD).arg(keys.topics()).arg(topic));
    }

    private static NotReplicatedException notReplicated(NotReplicatedException e, List<NewJob> jobs) {
        List<String> ids = jobs.stream().map(NewJob::id).toList();
        return new NotReplicatedException("Redis has the job(s) but " + e.getMessage() + ": they may exist; retry"
                + " with the same id(s): " + (ids.size() > 20 ? ids.subList(0, 20) + " and " + (ids.size() - 20)
                        + " more" : ids));
    }

    private static List<JobInfo> parseEnqueue(Partition p, List<NewJob> jobs, Response reply) {
        List<JobInfo> out = new ArrayList<>(jobs.size());
        for (int i = 0; i < jobs.size(); i++) {
            int base = 1 + i * 4;
            JobState state = JobState.ofLetter(reply.get(base + 3).toString());
            if (state == JobState.SUCCEEDED) {
                out.add(JobInfo.succeeded(jobs.get(i).id(), p.topic(), Instant.ofEpochMilli(reply.get(base + 1).toLong())));
                continue;
            }
            out.add(JobInfo.enqueued(jobs.get(i).id(), p.topic(), Instant.ofEpochMilli(reply.get(base + 1).toLong()),
                    state, reply.get(base + 2).toInteger(),
                    reply.get(base).toInteger() == 1));
        }
        return out;
    }

    /**
     * Every call that builds keys first learns the store's layout (once): when Redis was away at
     * start-up the check runs at the first call that reaches it; a store written with another
     * partition count then fails every call, loudly, rather than write to keys nobody reads.
     */
    private void ensureLayout() {
        redis.await(ensureLayoutAsync());
    }

    private Future<Void> ensureLayoutAsync() {
        if (keys.layoutKnown()) {
            return Future.succeededFuture();
        }
        // One caller checks; the others fail fast (as if Redis were away) rather than queue
        // behind a check that waits for a Redis that does not answer.
        if (!layoutCheck.compareAndSet(false, true)) {
            return Future.failedFuture(new StoreUnavailableException("checking the store's layout (" + keys.partitions() + ")",
                    null, true));
        }
        if (keys.layoutKnown()) {
            layoutCheck.set(false);
            return Future.succeededFuture();
        }
        return checkPartitionsAsync(partitions).<Void>mapEmpty().onComplete(done -> {
            layoutCheck.set(false);
            if (done.failed() && done.cause() instanceof IllegalStateException e) {
                LOG.error(e.getMessage());
            }
        });
    }

    /**
     * Records the partition count on first use of the store and fails when it differs from the
     * one the store was written with: jobs of partitions that a smaller count drops would never
     * be taken, and a larger count would look for some ids in the wrong partition. Returns the
     * count found (the given one on a new store).
     */
    public int checkPartitions(int partitions) {
        return redis.await(checkPartitionsAsync(partitions));
    }

    private Future<Integer> checkPartitionsAsync(int partitions) {
        return (cluster ? requireRedis7().compose(v -> warnOnFullCoverage()) : Future.<Void>succeededFuture())
                .compose(v -> redis.sendAsync(Request.cmd(Command.GET).arg(keys.partitions())))
                .compose(marker -> marker != null ? Future.succeededFuture(marker)
                        // A store without the marker but with topics was written by a release from before it
                        // (plain tags, whatever the count): mark it so, or its jobs would be looked for elsewhere.
                        : redis.sendAsync(Request.cmd(Command.EXISTS).arg(keys.topics()))
                                .compose(older -> redis.sendAsync(Request.cmd(Command.SET).arg(keys.partitions())
                                        .arg(older.toInteger() == 1 ? Integer.toString(partitions) : keys.partitionsValue())
                                        .arg("NX")))
                                // another replica's, if it was first
                                .compose(set -> redis.sendAsync(Request.cmd(Command.GET).arg(keys.partitions()))))
                .compose(marker -> {
                    String value = marker.toString();
                    int stored = Keys.countOf(value);
                    if (stored != partitions) {
                        return Future.failedFuture(new IllegalStateException("delayq.partitions is " + partitions
                                + " but the store (" + keys.partitions() + ") was written with " + stored
                                + ": jobs would be stranded. Keep " + stored + ", or move to " + partitions
                                + " under a new delayq.prefix while replicas with the old prefix drain the old jobs "
                                + "(see the README, \"Changing delayq.partitions\")"));
                    }
                    keys.useLayout(value);
                    return Future.succeededFuture(stored);
                });
    }

    /** Sharded pub/sub (the wake-ups on a cluster) needs Redis 7: refuse to start on an older cluster. */
    private Future<Void> requireRedis7() {
        return redis.sendAsync(Request.cmd(Command.INFO).arg("server")).compose(reply -> {
            for (String line : reply.toString().split("\\r?\\n")) {
                if (line.startsWith("redis_version:")) {
                    String version = line.substring("redis_version:".length()).trim();
                    if (Integer.parseInt(version.substring(0, version.indexOf('.'))) < 7) {
                        return Future.failedFuture(new IllegalStateException("delayq on a Redis Cluster needs Redis 7"
                                + " or later (sharded pub/sub); this cluster runs " + version));
                    }
                }
            }
            return Future.succeededFuture();
        });
    }

    /**
     * With {@code cluster-require-full-coverage yes} (Redis' default) a master that fails makes
     * every other master refuse every command (CLUSTERDOWN) until its replica is promoted: each
     * partition of every topic pauses for the election (0.5–1.5 s after the node timeout), and for
     * good if the master has no replica. Said once at start-up; a Redis that does not allow CONFIG
     * (a managed service, an ACL) is not asked again.
     */
    private Future<Void> warnOnFullCoverage() {
        String name = "cluster-require-full-coverage";
        return redis.sendAsync(Request.cmd(Command.CONFIG).arg("GET").arg(name)).map(reply -> {
            Response value = reply == null ? null : reply.isMap() ? reply.get(name) : reply.size() >= 2 ? reply.get(1) : null;
            if (value != null && "yes".equalsIgnoreCase(value.toString())) {
                LOG.warnf("this Redis Cluster has %s yes: while any one master fails over, every master refuses every "
                        + "command, so all partitions pause, not only the failed master's. Set it to no on every node "
                        + "(CONFIG SET %s no, and in redis.conf) so that one master's failure slows its own partitions "
                        + "only (see the README, \"Redis deployments\")", name, name);
            }
            return (Void) null;
        }).otherwise(e -> {
            LOG.debugf("%s could not be read (%s): not checked", name, e.toString());
            return null;
        });
    }

    // ---------------------------------------------------------------- reads

    public Optional<JobInfo> get(String topic, String id) {
        return redis.await(getAsync(topic, id));
    }

    /** As {@link #get}, holding no thread. */
    public Future<Optional<JobInfo>> getAsync(String topic, String id) {
        return runAsync("get", partitionOf(topic, id), Set.of(), List.of(id, dedupWindow(topic)), 0, null)
                .map(r -> parseGet(topic, id, r).map(JobDetail::info));
    }

    /** A job with its payload (JSON as enqueued, null when none or succeeded), for the dashboard. */
    public record JobDetail(JobInfo info, String payload) {
    }

    public Optional<JobDetail> lookup(String topic, String id) {
        return parseGet(topic, id, run("get", partitionOf(topic, id), Set.of(), List.of(id, dedupWindow(topic))));
    }

    private static Optional<JobDetail> parseGet(String topic, String id, Response r) {
        if (r.size() == 0) {
            return Optional.empty();
        }
        if (JobState.ofLetter(r.get(1).toString()) == JobState.SUCCEEDED) {
            return Optional.of(new JobDetail(
                    JobInfo.succeeded(id, topic, Instant.ofEpochMilli((long) Double.parseDouble(r.get(2).toString()))), null));
        }
        JobRecord rec = JobRecord.decode(r.get(0).toString());
        JobState state = JobState.ofLetter(r.get(1).toString());
        Instant deadAt = state == JobState.DEAD ? Instant.ofEpochMilli((long) Double.parseDouble(r.get(2).toString())) : null;
        return Optional.of(new JobDetail(new JobInfo(id, topic, Instant.ofEpochMilli(rec.runAt()), state, rec.attempts(),
                rec.lostAttempts(), rec.maxAttempts() == 0 ? null : rec.maxAttempts(),
                rec.lastError().isEmpty() ? null : rec.lastError(), deadAt, null, false), rec.payloadOrNull()));
    }

    /** Every topic that has had jobs, with counts summed over partitions (one pipelined round trip). */
    public List<TopicStats> topics() {
        List<String> names = topicNames();
        ensureLayout();
        List<Request> reads = new ArrayList<>();
        for (String topic : names) {
            for (Partition p : partitionsOf(topic)) {
                reads.add(Request.cmd(Command.HLEN).arg(keys.jobs(p)));
                reads.add(Request.cmd(Command.ZCARD).arg(keys.inflight(p)));
                reads.add(Request.cmd(Command.ZCARD).arg(keys.dead(p)));
                reads.add(Request.cmd(Command.GET).arg(keys.next(p)));
            }
        }
        List<Response> replies = reads.isEmpty() ? List.of() : readAll(reads);
        List<TopicStats> out = new ArrayList<>(names.size());
        int i = 0;
        for (String topic : names) {
            long all = 0, inflight = 0, dead = 0, next = -1;
            for (int p = 0; p < partitions; p++, i += 4) {
                all += replies.get(i).toLong();
                inflight += replies.get(i + 1).toLong();
                dead += replies.get(i + 2).toLong();
                Response n = replies.get(i + 3);
                if (n != null) {
                    long v = n.toLong();
                    next = next < 0 ? v : Math.min(next, v);
                }
            }
            out.add(new TopicStats(topic, all - inflight - dead, inflight, dead, next));
        }
        return out;
    }

    /**
     * What the safety-net poll reads of one partition: the "next" lower bound of its due times
     * (-1 with nothing scheduled), the "leasenext" lower bound of its lease deadlines (-1 with
     * none), and whether its topic is paused.
     */
    public record Head(long next, long leaseNext, boolean paused) {
    }

    /**
     * The safety-net poll's read of the given partitions, one future per partition, in order. On
     * a single Redis one MGET for all of them, so that an idle replica costs Redis one command per
     * poll however many topics it serves (paused ones included); on a Redis Cluster, where the
     * partitions' keys live in different slots, one MGET per partition, all sent at once and each
     * settled on its own: a master that does not answer fails only its own partitions' reads.
     * The schedules' revision rides along (see {@link #recentSchedulesRevision}).
     */
    public List<Future<Head>> headsAsync(List<Partition> ps) {
        long readAt = System.nanoTime();
        Future<Void> layout = ensureLayoutAsync();
        List<Future<Head>> out = new ArrayList<>(ps.size());
        if (cluster) {
            for (Partition p : ps) {
                out.add(layout.compose(v -> redis.sendAsync(
                        Request.cmd(Command.MGET).arg(keys.next(p)).arg(keys.leaseNext(p)).arg(keys.paused(p))))
                        .map(r -> head(r, 0)));
            }
            layout.compose(v -> redis.sendAsync(Request.cmd(Command.MGET).arg(keys.schedulesRevision())))
                    .onSuccess(r -> noteRevision(r.get(0), readAt));
            return out;
        }
        Future<Response> all = layout.compose(v -> {
            Request mget = Request.cmd(Command.MGET);
            ps.forEach(p -> mget.arg(keys.next(p)).arg(keys.leaseNext(p)).arg(keys.paused(p)));
            mget.arg(keys.schedulesRevision());
            return redis.sendAsync(mget);
        }).onSuccess(r -> noteRevision(r.get(3 * ps.size()), readAt));
        for (int i = 0; i < ps.size(); i++) {
            int at = 3 * i;
            out.add(all.map(r -> head(r, at)));
        }
        return out;
    }

    private static Head head(Response r, int at) {
        Response next = r.get(at);
        Response leaseNext = r.get(at + 1);
        return new Head(next == null ? -1 : next.toLong(),
                leaseNext == null ? -1 : (long) Double.parseDouble(leaseNext.toString()), r.get(at + 2) != null);
    }

    private void noteRevision(Response revision, long readAtNanos) {
        schedulesRevision = new Revision(revision == null ? "0" : revision.toString(), readAtNanos);
    }

    private record Revision(String value, long readAtNanos) {
    }

    private volatile Revision schedulesRevision;

    /**
     * The revision of the schedules made over REST (a counter every change raises) as the last
     * safety-net poll read it, if that read began less than {@code maxAgeMs} ago; null otherwise
     * (this replica polls nothing: it serves no topic).
     */
    public String recentSchedulesRevision(long maxAgeMs) {
        Revision r = schedulesRevision;
        return r != null && System.nanoTime() - r.readAtNanos() < maxAgeMs * 1_000_000 ? r.value() : null;
    }

    /** Earliest lease deadline of a partition's in-flight jobs, -1 when none (the reclaimer's cheap check). */
    public long earliestLeaseDeadline(Partition p) {
        ensureLayout();
        Response r = redis.send(Request.cmd(Command.ZRANGE).arg(keys.inflight(p)).arg(0).arg(0).arg("WITHSCORES"));
        if (r == null || r.size() == 0) {
            return -1;
        }
        // RESP2 gives [member, score]; RESP3 gives [[member, score]].
        Response score = r.get(0).type() == io.vertx.redis.client.ResponseType.MULTI ? r.get(0).get(1) : r.get(1);
        return (long) Double.parseDouble(score.toString());
    }

    /**
     * Gauge values of a topic summed over its partitions: {scheduled, inflight, dead, age in ms of
     * the oldest overdue scheduled job (0 when none is overdue), due now (runAt passed, not taken),
     * 1 if paused (any partition) else 0}. One script call per partition.
     */
    public long[] gauges(String topic) {
        long jobs = 0, inflight = 0, dead = 0, oldest = -1, now = 0, due = 0, paused = 0;
        for (Partition p : partitionsOf(topic)) {
            Response r = run("stats", p, aroundNow(), List.of());
            jobs += r.get(0).toLong();
            inflight += r.get(1).toLong();
            dead += r.get(2).toLong();
            long o = r.get(3).toLong();
            now = r.get(4).toLong();
            due += r.get(5).toLong();
            paused = Math.max(paused, r.get(6).toLong());
            if (o >= 0) {
                oldest = oldest < 0 ? o : Math.min(oldest, o);
            }
        }
        return new long[] { jobs - inflight - dead, inflight, dead, oldest < 0 ? 0 : now - oldest, due, paused };
    }

    /** How many topics the topics SET holds (SCARD). */
    public long topicCount() {
        return redis.send(Request.cmd(Command.SCARD).arg(keys.topics())).toLong();
    }

    /** Every known topic (the topics SET). */
    public List<String> topicNames() {
        List<String> names = new ArrayList<>();
        for (Response r : redis.send(Request.cmd(Command.SMEMBERS).arg(keys.topics()))) {
            names.add(r.toString());
        }
        names.sort(null);
        return names;
    }

    // ---------------------------------------------------------------- dashboard

    /**
     * A topic for the dashboard: one atomic {@code peek} per partition, bounded however many
     * jobs it holds (a timeline of {@code buckets} × {@code bucketMs} from now, the next
     * {@code nextLimit} jobs, {@code inflightLimit} jobs in flight), merged.
     */
    public TopicSnapshot peek(String topic, long bucketMs, int buckets, int nextLimit, int inflightLimit) {
        long now = 0, due = 0, oldest = -1, jobs = 0, inflightCount = 0, dead = 0;
        long[] timeline = new long[buckets];
        List<TopicSnapshot.Scheduled> next = new ArrayList<>();
        List<TopicSnapshot.Running> inflight = new ArrayList<>();
        for (Partition p : partitionsOf(topic)) {
            Response r = run("peek", p, aroundNow(), List.of(Long.toString(bucketMs), Integer.toString(buckets),
                    Integer.toString(nextLimit), Integer.toString(inflightLimit)));
            now = Math.max(now, r.get(0).toLong());
            due += r.get(1).toLong();
            jobs += r.get(6).toLong();
            inflightCount += r.get(7).toLong();
            dead += r.get(8).toLong();
            long o = r.get(2).toLong();
            if (o >= 0) {
                oldest = oldest < 0 ? o : Math.min(oldest, o);
            }
            for (int i = 0; i < buckets && i < r.get(3).size(); i++) {
                timeline[i] += r.get(3).get(i).toLong();
            }
            Response listed = r.get(4);
            for (int i = 0; i + 2 < listed.size(); i += 3) {
                next.add(new TopicSnapshot.Scheduled(listed.get(i).toString(), (long) Double.parseDouble(listed.get(i + 1)
                        .toString()), record(listed.get(i + 2))));
            }
            Response running = r.get(5);
            for (int i = 0; i + 3 < running.size(); i += 4) {
                String token = running.get(i + 2).toString();
                int colon = token.indexOf(':');
                inflight.add(new TopicSnapshot.Running(running.get(i).toString(),
                        (long) Double.parseDouble(running.get(i + 1).toString()),
                        colon > 0 ? token.substring(0, colon) : token, record(running.get(i + 3))));
            }
        }
        next.sort(java.util.Comparator.comparingLong(TopicSnapshot.Scheduled::runAtMs));
        inflight.sort(java.util.Comparator.comparingLong(TopicSnapshot.Running::leaseDeadlineMs));
        return new TopicSnapshot(now, jobs - inflightCount - dead, due, oldest, inflightCount, dead, timeline,
                next.size() > nextLimit ? next.subList(0, nextLimit) : next,
                inflight.size() > inflightLimit ? inflight.subList(0, inflightLimit) : inflight);
    }

    /**
     * Announces a replica (see io.delayq.ops.ReplicaRegistry): {@code json} replaces its entry;
     * and that the topics it serves were in use at Redis time {@code nowMs} (what their retention
     * counts from). One round trip.
     */
    public void putReplica(String id, String json, Collection<String> serves, long nowMs) {
        List<Request> writes = new ArrayList<>(2);
        writes.add(Request.cmd(Command.HSET).arg(keys.replicas()).arg(id).arg(json));
        if (!serves.isEmpty()) {
            Request active = Request.cmd(Command.HSET).arg(keys.topicsActive());
            serves.forEach(t -> active.arg(t).arg(nowMs));
            writes.add(active);
        }
        readAll(writes);
    }

    /** Every replica's entry, by id, and Redis' clock (epoch ms) when they were read: one round trip. */
    public record ReplicaEntries(long redisNowMs, Map<String, String> entries) {
    }

    /** Every replica's entry, with the Redis time of the read (replicas are judged alive by it). */
    public ReplicaEntries replicasNow() {
        List<Response> r = readAll(List.of(Request.cmd(Command.TIME), Request.cmd(Command.HGETALL).arg(keys.replicas())));
        return new ReplicaEntries(timeMs(r.get(0)), pairs(r.get(1)));
    }

    // ---------------------------------------------------------------- forgetting topics

    /**
     * What {@link #forget} did; the counts are the topic's jobs and its dead-job callbacks still to
     * send when it {@link Outcome#HAS_JOBS}.
     */
    public record Forgetting(Outcome outcome, long jobs, long inflight, long dead, long callbacks) {
        public enum Outcome {
            /** Taken out of the topics SET, its partitions' keys deleted. */
            FORGOTTEN,
            /** Not in the topics SET. */
            UNKNOWN,
            /** Holds jobs (scheduled, in flight or dead) or callbacks still to send: left as it was. */
            HAS_JOBS,
            /** A job came in while it was being forgotten: listed again, with that job. */
            IN_USE_AGAIN
        }
    }

    /**
     * Forgets a topic that holds no jobs: takes it out of the topics SET, and deletes what its
     * partitions keep (flow state, rate-limit pace, tick records, dedup ids). Whether a replica
     * serves it is the caller's question. An enqueue racing with it is never lost (see
     * forget.lua): its job is stored and its topic listed again, and this answers
     * {@link Forgetting.Outcome#IN_USE_AGAIN} (some partitions' state may be gone then).
     */
    public Forgetting forget(String topic) {
        ensureLayout();
        if (redis.send(Request.cmd(Command.SISMEMBER).arg(keys.topics()).arg(topic)).toInteger() == 0) {
            return new Forgetting(Forgetting.Outcome.UNKNOWN, 0, 0, 0, 0);
        }
        long[] held = forgetStep(topic, "mark");
        if (held[0] > 0 || held[3] > 0) {
            return new Forgetting(Forgetting.Outcome.HAS_JOBS, held[0] - held[1] - held[2], held[1], held[2], held[3]);
        }
        forgetProbe.accept("marked");
        redis.send(Request.cmd(Command.SREM).arg(keys.topics()).arg(topic));
        forgetProbe.accept("unlisted");
        long[] after = forgetStep(topic, "clear");
        if (after[0] != 0) {
            redis.send(Request.cmd(Command.SADD).arg(keys.topics()).arg(topic));
            return new Forgetting(Forgetting.Outcome.IN_USE_AGAIN, 0, 0, 0, 0);
        }
        // From here on, an enqueue by a replica that still believes the topic listed is listed
        // again by the partition's mark alone (this replica's belief is dropped last, so that the
        // tests can enqueue as such a replica would).
        forgetProbe.accept("cleared");
        redis.send(Request.cmd(Command.HDEL).arg(keys.topicsActive()).arg(topic));
        listedAt.remove(topic);
        return new Forgetting(Forgetting.Outcome.FORGOTTEN, 0, 0, 0, 0);
    }

    /**
     * One step of forget.lua on every partition: {jobs, inflight, dead, callbacks} summed, jobs -1 when
     * (a step "clear" found that) a job came in meanwhile.
     */
    private long[] forgetStep(String topic, String step) {
        long[] sum = new long[4];
        boolean again = false;
        for (Partition p : partitionsOf(topic)) {
            Response r = run("forget", p, Set.of(), List.of(step, Long.toString(FORGOTTEN_MARK_MS)));
            long jobs = r.get(0).toLong();
            again |= jobs != 0;
            sum[0] += Math.max(0, jobs);
            sum[1] += r.get(1).toLong();
            sum[2] += r.get(2).toLong();
            sum[3] += r.get(3).toLong();
        }
        if (again && sum[0] == 0) {
            sum[0] = -1;
        }
        return sum;
    }

    /** Test seam: {@code probe} is told "marked", "unlisted" and "cleared" as a forget passes those steps. */
    public void forgetProbe(Consumer<String> probe) {
        this.forgetProbe = probe == null ? step -> {
        } : probe;
    }

    /**
     * Whether a topic is in use now (a partition holds jobs or remembered dedup ids), and the
     * Redis time (ms) it was last seen in use ({@link Keys#topicsActive()}), -1 when never: one
     * round trip, one EXISTS per partition.
     */
    public record Activity(boolean inUse, long lastActiveMs) {
    }

    /** A topic's {@link Activity}. */
    public Activity activity(String topic) {
        ensureLayout();
        List<Request> reads = new ArrayList<>(partitions + 1);
        reads.add(Request.cmd(Command.HGET).arg(keys.topicsActive()).arg(topic));
        for (Partition p : partitionsOf(topic)) {
            reads.add(Request.cmd(Command.EXISTS).arg(keys.jobs(p)).arg(keys.done(p)));
        }
        List<Response> r = readAll(reads);
        boolean inUse = false;
        for (int i = 1; i < r.size(); i++) {
            inUse |= r.get(i).toLong() > 0;
        }
        return new Activity(inUse, r.get(0) == null ? -1 : r.get(0).toLong());
    }

    /** Records that a topic was in use at Redis time {@code nowMs} (see {@link Keys#topicsActive()}). */
    public void markActive(String topic, long nowMs) {
        redis.send(Request.cmd(Command.HSET).arg(keys.topicsActive()).arg(topic).arg(nowMs));
    }

    /**
     * Drops the {@link Keys#topicsActive()} entries of topics not in the topics SET whose time is
     * older than {@code beforeMs} (a served topic that never had a job, no longer served); returns
     * how many. It reads the whole hash: for the end of a round over the topics, not every minute.
     */
    public int dropStaleActivity(long beforeMs) {
        List<String> stale = new ArrayList<>();
        pairs(redis.send(Request.cmd(Command.HGETALL).arg(keys.topicsActive()))).forEach((topic, at) -> {
            if (Long.parseLong(at) < beforeMs) {
                stale.add(topic);
            }
        });
        if (stale.isEmpty()) {
            return 0;
        }
        Request listed = Request.cmd(Command.SMISMEMBER).arg(keys.topics());
        stale.forEach(listed::arg);
        Response member = redis.send(listed);
        Request drop = Request.cmd(Command.HDEL).arg(keys.topicsActive());
        int n = 0;
        for (int i = 0; i < stale.size(); i++) {
            if (member.get(i).toInteger() == 0) {
                drop.arg(stale.get(i));
                n++;
            }
        }
        if (n > 0) {
            redis.send(drop);
        }
        return n;
    }

    /** A page of the topics SET (SSCAN): the names, and the cursor to go on from ("0": the end). */
    public record TopicPage(String cursor, List<String> topics) {
    }

    /** The next page of the topics SET after {@code cursor} ("0" to begin), about {@code count} names. */
    public TopicPage scanTopics(String cursor, int count) {
        Response r = redis.send(Request.cmd(Command.SSCAN).arg(keys.topics()).arg(cursor).arg("COUNT").arg(count));
        List<String> names = new ArrayList<>();
        r.get(1).forEach(n -> names.add(n.toString()));
        return new TopicPage(r.get(0).toString(), names);
    }

    /** Drops the entries of replicas gone. */
    public void forgetReplicas(List<String> ids) {
        if (!ids.isEmpty()) {
            Request del = Request.cmd(Command.HDEL).arg(keys.replicas());
            ids.forEach(del::arg);
            redis.send(del);
        }
    }

    /** A HGETALL reply as a map: RESP3 sends a map, RESP2 [field, value, field, value...]. */
    private static Map<String, String> pairs(Response all) {
        Map<String, String> out = new HashMap<>();
        if (all == null) {
            return out;
        }
        if (all.isMap()) {
            for (String k : all.getKeys()) {
                out.put(k, all.get(k).toString());
            }
        } else {
            for (int i = 0; i + 1 < all.size(); i += 2) {
                out.put(all.get(i).toString(), all.get(i + 1).toString());
            }
        }
        return out;
    }

    private static JobRecord record(Response r) {
        String s = r == null ? "" : r.toString();
        return s.isEmpty() ? null : JobRecord.decode(s);
    }

    // ---------------------------------------------------------------- recurring schedules

    /** The schedules created over REST: name → definition (JSON, see io.delayq.schedule). */
    public Map<String, String> scheduleDefinitions() {
        return pairs(redis.send(Request.cmd(Command.HGETALL).arg(keys.schedules())));
    }

    /** Redis' clock, epoch ms (TIME). */
    public long redisTimeMs() {
        return timeMs(redis.send(Request.cmd(Command.TIME)));
    }

    private static long timeMs(Response t) {
        return t.get(0).toLong() * 1000 + t.get(1).toLong() / 1000;
    }

    /** The definition (JSON) of a schedule made over REST, null when there is none. */
    public String scheduleDefinition(String name) {
        Response r = redis.send(Request.cmd(Command.HGET).arg(keys.schedules()).arg(name));
        return r == null ? null : r.toString();
    }

    /** Stores a schedule's definition; true when the name was new. */
    public boolean putSchedule(String name, String definition) {
        boolean created = redis.send(Request.cmd(Command.HSET).arg(keys.schedules()).arg(name).arg(definition))
                .toInteger() == 1;
        schedulesChanged();
        return created;
    }

    /**
     * Raises the schedules' revision after a change: the other replicas' safety-net polls see it
     * and re-read the schedules. (Should this fail, they re-read within a minute anyway.)
     */
    private void schedulesChanged() {
        try {
            redis.send(Request.cmd(Command.INCR).arg(keys.schedulesRevision()));
        } catch (RuntimeException e) {
            // The change itself is stored: a 503 now would make the caller think it was not.
            LOG.warnf("the schedules' revision was not raised (the other replicas see the change within a minute): %s",
                    e.toString());
        }
    }

    /** Deletes a schedule's definition; true when it existed. */
    public boolean deleteSchedule(String name) {
        boolean existed = redis.send(Request.cmd(Command.HDEL).arg(keys.schedules()).arg(name)).toInteger() == 1;
        schedulesChanged();
        return existed;
    }

    /**
     * Fences a schedule off the partitions of {@code topic}: its tick record there becomes at
     * least {@code untilMs}, so the enqueue script refuses every tick up to then — a replica that
     * has not yet seen a deletion or a change of topic cannot enqueue a tick of the old
     * definition there (the record is compared in the same atomic step as the write).
     */
    public void fenceTicks(String name, String topic, long untilMs) {
        for (Partition p : partitionsOf(topic)) {
            run("fence", p, Set.of(), List.of(name, Long.toString(untilMs)));
        }
    }

    /** The last tick (epoch ms) a schedule fired or skipped into any partition of {@code topic}; -1 when none. */
    public long lastTick(String name, String topic) {
        ensureLayout();
        List<Request> reads = new ArrayList<>(partitions);
        for (Partition p : partitionsOf(topic)) {
            reads.add(Request.cmd(Command.HGET).arg(keys.ticks(p)).arg(name));
        }
        long last = -1;
        for (Response r : readAll(reads)) {
            if (r != null) {
                last = Math.max(last, r.toLong());
            }
        }
        return last;
    }

    // ---------------------------------------------------------------- cancel and dead set

    public CancelOutcome cancel(String topic, String id) {
        return redis.await(cancelAsync(topic, id));
    }

    /** As {@link #cancel}, holding no thread. */
    public Future<CancelOutcome> cancelAsync(String topic, String id) {
        return runAsync("cancel", partitionOf(topic, id), Set.of(), List.of(id), 0, null).map(r -> switch (r.toInteger()) {
            case 1 -> CancelOutcome.CANCELLED;
            case -1 -> CancelOutcome.INFLIGHT;
            case -2 -> CancelOutcome.DEAD;
            default -> CancelOutcome.UNKNOWN;
        });
    }

    /**
     * Ids of a topic's jobs that died at or before {@code diedByMs}, oldest first, at most
     * {@code limit} per partition: what "requeue all" and "purge all" go through, so that a job
     * that dies again meanwhile is not taken a second time.
     */
    public List<String> deadIdsUpTo(String topic, long diedByMs, int limit) {
        ensureLayout();
        List<String> out = new ArrayList<>();
        for (Partition p : partitionsOf(topic)) {
            Response ids = redis.send(Request.cmd(Command.ZRANGE).arg(keys.dead(p)).arg("-inf").arg(diedByMs)
                    .arg("BYSCORE").arg("LIMIT").arg(0).arg(limit));
            ids.forEach(r -> out.add(r.toString()));
        }
        return out;
    }

    /** Dead jobs of a topic, newest first, at most {@code limit}. */
    public List<DeadJob> dead(String topic, int limit) {
        ensureLayout();
        List<DeadJob> out = new ArrayList<>();
        for (Partition p : partitionsOf(topic)) {
            Response ids = redis.send(Request.cmd(Command.ZRANGE).arg(keys.dead(p)).arg("+inf").arg("-inf")
                    .arg("BYSCORE").arg("REV").arg("LIMIT").arg(0).arg(limit).arg("WITHSCORES"));
            List<String> idList = new ArrayList<>();
            List<Long> times = new ArrayList<>();
            boolean nested = ids.size() > 0 && ids.get(0).type() == io.vertx.redis.client.ResponseType.MULTI;
            for (int i = 0; i < ids.size(); i += nested ? 1 : 2) {
                Response member = nested ? ids.get(i).get(0) : ids.get(i);
                Response score = nested ? ids.get(i).get(1) : ids.get(i + 1);
                idList.add(member.toString());
                times.add((long) Double.parseDouble(score.toString()));
            }
            if (idList.isEmpty()) {
                continue;
            }
            Request hmget = Request.cmd(Command.HMGET).arg(keys.jobs(p));
            idList.forEach(hmget::arg);
            Response recs = redis.send(hmget);
            for (int i = 0; i < idList.size(); i++) {
                if (recs.get(i) != null) {
                    out.add(new DeadJob(idList.get(i), times.get(i), JobRecord.decode(recs.get(i).toString())));
                }
            }
        }
        out.sort((a, b) -> Long.compare(b.diedAt(), a.diedAt()));
        return out.size() > limit ? out.subList(0, limit) : out;
    }

    /** Dead job back to scheduled, due now, attempts reset; empty when the id is not dead. */
    public Optional<Instant> revive(String topic, String id) {
        Partition p = partitionOf(topic, id);
        Response r = run("revive", p, aroundNow(), List.of(id, scriptChannel(p)));
        return r.size() == 0 ? Optional.empty() : Optional.of(Instant.ofEpochMilli(r.get(0).toLong()));
    }

    public boolean purge(String topic, String id) {
        return run("purge", partitionOf(topic, id), Set.of(), List.of(id)).toInteger() == 1;
    }

    // ---------------------------------------------------------------- reschedule

    /**
     * Moves a scheduled job to run {@code ms} after Redis now ({@code delayed}) or at epoch ms
     * {@code ms}, across day shards in one script; a job that becomes its partition's earliest
     * wakes the takers. A job in flight or dead is not moved.
     */
    public RescheduleResult reschedule(String topic, String id, boolean delayed, long ms) {
        Partition p = partitionOf(topic, id);
        // The new runAt's shard is known here; the old one's day is in the record, and the first
        // call names it (DQNEEDDAY) unless it is among these.
        Set<Integer> days = new TreeSet<>();
        aroundDay(days, delayed ? System.currentTimeMillis() + ms : ms);
        Response r = run("reschedule", p, days, List.of(id, delayed ? "d" : "a", Long.toString(ms), scriptChannel(p)));
        return switch (r.get(0).toInteger()) {
            case 1 -> {
                JobRecord rec = JobRecord.decode(r.get(1).toString());
                yield new RescheduleResult(RescheduleResult.Outcome.RESCHEDULED, new JobInfo(id, topic,
                        Instant.ofEpochMilli(rec.runAt()), JobState.SCHEDULED, rec.attempts(),
                        rec.maxAttempts() == 0 ? null : rec.maxAttempts(),
                        rec.lastError().isEmpty() ? null : rec.lastError(), null, null, false));
            }
            case -1 -> new RescheduleResult(RescheduleResult.Outcome.INFLIGHT, null);
            case -2 -> new RescheduleResult(RescheduleResult.Outcome.DEAD, null);
            default -> new RescheduleResult(RescheduleResult.Outcome.UNKNOWN, null);
        };
    }

    // ---------------------------------------------------------------- flow control

    /**
     * Pauses the topic: no replica takes its jobs until it is resumed (enqueue still works, and
     * jobs in flight finish as usual). Written to every partition, one script each; a failure
     * half-way leaves some paused: pausing again is harmless.
     */
    public FlowSettings pause(String topic) {
        return flow(topic, "pause", "");
    }

    /** Resumes the topic, and wakes the takers of its partitions so that due jobs go at once. */
    public FlowSettings resume(String topic) {
        return flow(topic, "resume", "");
    }

    /** Sets the topic's rate limit (jobs/s over all replicas), winning over the configuration's. */
    public FlowSettings setRateLimit(String topic, double perSecond) {
        return flow(topic, "rate", Double.toString(perSecond));
    }

    /** Clears the rate limit set by {@link #setRateLimit}: the configuration's applies again. */
    public FlowSettings clearRateLimit(String topic) {
        return flow(topic, "unrate", "");
    }

    private FlowSettings flow(String topic, String what, String value) {
        // Listed (every time: rare, and a topic forgotten since must come back with its new
        // state), so that a topic paused before its first job shows as paused.
        redis.await(sadd(topic));
        List<FlowSettings> each = new ArrayList<>(partitions);
        for (Partition p : partitionsOf(topic)) {
            Response r = run("flow", p, Set.of(), List.of(what, value, scriptChannel(p)));
            String rate = r.get(1).toString();
            each.add(new FlowSettings(r.get(0).toLong(), rate.isEmpty() ? null : Double.valueOf(rate)));
        }
        return merged(each);
    }

    /** A topic's settings from those of its partitions, in partition order. */
    private static FlowSettings merged(List<FlowSettings> each) {
        long pausedAt = -1;
        Double rate = null;
        for (FlowSettings f : each) {
            if (f.paused() && (pausedAt < 0 || f.pausedAt() < pausedAt)) {
                pausedAt = f.pausedAt();
            }
            if (rate == null) {
                rate = f.rateLimit();
            }
        }
        return pausedAt < 0 && rate == null ? FlowSettings.NONE : new FlowSettings(pausedAt, rate);
    }

    /** The flow settings of the given topics: one MGET per partition, all sent at once. */
    public Map<String, FlowSettings> flows(Collection<String> topics) {
        Map<String, FlowSettings> out = new LinkedHashMap<>();
        if (topics.isEmpty()) {
            return out;
        }
        ensureLayout();
        List<Request> reads = new ArrayList<>(topics.size() * partitions);
        for (String topic : topics) {
            for (Partition p : partitionsOf(topic)) {
                reads.add(Request.cmd(Command.MGET).arg(keys.paused(p)).arg(keys.rateLimit(p)));
            }
        }
        List<Response> replies = readAll(reads);
        int i = 0;
        for (String topic : topics) {
            List<FlowSettings> each = new ArrayList<>(partitions);
            for (int p = 0; p < partitions; p++, i++) {
                Response pair = replies.get(i);
                each.add(new FlowSettings(pair.get(0) == null ? -1 : pair.get(0).toLong(),
                        pair.get(1) == null ? null : Double.valueOf(pair.get(1).toString())));
            }
            out.put(topic, merged(each));
        }
        return out;
    }

    /** The topic's rate limit in this replica's configuration (jobs/s), empty when none. */
    public OptionalDouble configuredRateLimit(String topic) {
        Double rate = rateLimits.get(topic);
        return rate == null ? OptionalDouble.empty() : OptionalDouble.of(rate);
    }

    // ---------------------------------------------------------------- dispatch

    /**
     * Leases up to {@code limit} due jobs of a partition, and acks {@code acks} in the same call.
     *
     * @param olderDays past days known to hold jobs; the days this take learnt it needs are added
     *        to it, so the caller's next take passes them at once (the caller owns the set)
     * @param tokenPrefix unique per call: the lease token of job i is tokenPrefix + i
     * @param deadlineMs Redis time after which the call leases nothing (it still acks): a call
     *        that Redis runs late, after its caller gave up waiting, must not lease jobs to a
     *        token nobody holds; 0 for none
     */
    public TakeResult take(Partition p, int limit, long leaseMs, String tokenPrefix, Set<Integer> olderDays,
            List<Lease> acks, long deadlineMs) {
        return redis.await(takeAsync(p, limit, leaseMs, tokenPrefix, olderDays, acks, deadlineMs));
    }

    /**
     * As {@link #take}, holding no thread: the takers of a replica share a few threads. The caller
     * must leave {@code olderDays} alone until the future completes (it is updated before).
     */
    public Future<TakeResult> takeAsync(Partition p, int limit, long leaseMs, String tokenPrefix, Set<Integer> olderDays,
            List<Lease> acks, long deadlineMs) {
        Set<Integer> around = aroundNow();
        Set<Integer> days = new TreeSet<>(around);
        days.addAll(olderDays);
        List<String> args = new ArrayList<>(4 + acks.size() * 2);
        args.add(Integer.toString(limit));
        args.add(Long.toString(leaseMs));
        args.add(tokenPrefix);
        args.add(Long.toString(deadlineMs));
        args.add(dedupWindow(p.topic()));
        args.add(Double.toString(rateLimits.getOrDefault(p.topic(), 0.0)));
        args.add(Integer.toString(partitions));
        addLeases(args, acks);
        // A reply that comes after we stopped waiting for it (Redis ran the take before the
        // deadline, the reply was slow): its jobs are leased to a token nobody holds. Put them
        // back at once rather than let them lose an attempt when the lease expires.
        return runAsync("take", p, days, args, 0, late -> {
            List<Lease> orphans = parseTake(p, tokenPrefix, late).jobs().stream().map(TakenJob::lease).toList();
            if (!orphans.isEmpty()) {
                Thread.ofVirtual().name("delayq-late-take").start(() -> requeueOrphans(p, orphans));
            }
        }).map(r -> {
            days.removeAll(around);
            if (days.size() > 64) {
                days.clear(); // a bound: days emptied long ago are simply learnt again if still needed
            }
            olderDays.clear();
            olderDays.addAll(days);
            return parseTake(p, tokenPrefix, r);
        });
    }

    private static TakeResult parseTake(Partition p, String tokenPrefix, Response r) {
        long now = r.get(0).toLong();
        long next = r.get(1).toLong();
        long notBefore = r.get(2).toLong();
        int staleCount = r.get(3).toInteger();
        List<String> stale = new ArrayList<>(staleCount);
        for (int i = 0; i < staleCount; i++) {
            stale.add(r.get(4 + i).toString());
        }
        List<TakenJob> jobs = new ArrayList<>((r.size() - 4 - staleCount) / 2);
        for (int i = 4 + staleCount, n = 1; i < r.size(); i += 2, n++) {
            String rec = r.get(i + 1).toString();
            jobs.add(new TakenJob(p, new Lease(r.get(i).toString(), tokenPrefix + n),
                    rec.isEmpty() ? null : JobRecord.decode(rec)));
        }
        return new TakeResult(now, next, jobs, stale, notBefore);
    }

    private void requeueOrphans(Partition p, List<Lease> orphans) {
        try {
            int back = requeue(p, orphans,
                    late -> LOG.infof("put back %s job(s) of a take on %s that answered after its timeout", late, p));
            LOG.infof("put back %d job(s) of a take on %s that answered after its timeout", back, p);
        } catch (RuntimeException e) {
            LOG.warnf("a take on %s answered after its timeout; putting its %d job(s) back failed (%s): unless that"
                    + " reply is late too, they run again when their lease expires", p, orphans.size(), e.toString());
        }
    }

    /**
     * Puts back, due now and with the attempt not counted, the jobs still leased under any of the
     * given take token prefixes: takes whose outcome the caller does not know (the reply was lost).
     * One read of the partition's leases, then the token-checked requeue: a lease since acked,
     * failed or retaken is left alone. Its future gives how many were put back.
     */
    public Future<Integer> releaseTakesAsync(Partition p, List<String> tokenPrefixes) {
        List<String> prefixes = List.copyOf(tokenPrefixes);
        return ensureLayoutAsync().compose(v -> redis.sendAsync(Request.cmd(Command.HGETALL).arg(keys.leases(p))))
                .compose(all -> {
                    List<Lease> orphans = new ArrayList<>();
                    pairs(all).forEach((id, token) -> addIfOrphan(orphans, id, token, prefixes));
                    return orphans.isEmpty() ? Future.succeededFuture(0) : requeueAsync(p, orphans, null);
                });
    }

    private static void addIfOrphan(List<Lease> orphans, String id, String token, List<String> prefixes) {
        for (String prefix : prefixes) {
            if (token.startsWith(prefix)) {
                orphans.add(new Lease(id, token));
                return;
            }
        }
    }

    /**
     * Completes jobs (remembering their ids as succeeded when the topic has a dedup window);
     * returns the ids whose lease was no longer ours (left untouched).
     */
    public List<String> ack(Partition p, List<Lease> leases) {
        return redis.await(ackAsync(p, leases));
    }

    /** As {@link #ack}, holding no thread. */
    public Future<List<String>> ackAsync(Partition p, List<Lease> leases) {
        List<String> args = new ArrayList<>(2 + leases.size() * 2);
        args.add(dedupWindow(p.topic()));
        addLeases(args, leases);
        return runAsync("ack", p, Set.of(), args, 0, null).map(JobStore::ids);
    }

    private static List<String> ids(Response r) {
        List<String> out = new ArrayList<>(r.size());
        for (Response id : r) {
            out.add(id.toString());
        }
        return out;
    }

    private static void addLeases(List<String> args, List<Lease> leases) {
        args.add(Integer.toString(leases.size()));
        for (Lease l : leases) {
            args.add(l.id());
            args.add(l.token());
        }
    }

    /** Records a failed attempt: retry after {@code delayMs}, or dead after the last attempt. */
    public FailOutcome fail(Partition p, Lease lease, long delayMs, String error, int defaultMaxAttempts) {
        return fail(p, lease, delayMs, error, defaultMaxAttempts, false);
    }

    /** As above; a {@code permanent} failure is dead at once, whatever attempts remain. */
    public FailOutcome fail(Partition p, Lease lease, long delayMs, String error, int defaultMaxAttempts,
            boolean permanent) {
        Set<Integer> days = new TreeSet<>();
        aroundDay(days, System.currentTimeMillis() + delayMs);
        Response r = run("fail", p, days, List.of(lease.id(), lease.token(), Long.toString(delayMs),
                oneLine(error), Integer.toString(defaultMaxAttempts), scriptChannel(p), permanent ? "1" : "0",
                callbackFlag(p)));
        return switch (r.get(0).toString()) {
            case "retry" -> new FailOutcome(FailOutcome.Kind.RETRY, r.get(1).toLong(), r.get(2).toInteger());
            case "dead" -> {
                calledBack(p);
                yield new FailOutcome(FailOutcome.Kind.DEAD, r.get(1).toLong(), r.get(2).toInteger());
            }
            default -> new FailOutcome(FailOutcome.Kind.STALE, 0, 0);
        };
    }

    /**
     * Ends a snoozed attempt: the job is due again {@code ms} after Redis now ({@code absolute}
     * false) or at epoch ms {@code ms} (true), its attempt not counted. Returns the new runAt, or
     * empty when the lease was no longer ours (nothing changed).
     */
    public OptionalLong snooze(Partition p, Lease lease, boolean absolute, long ms) {
        Set<Integer> days = new TreeSet<>();
        aroundDay(days, absolute ? Math.max(ms, System.currentTimeMillis()) : System.currentTimeMillis() + ms);
        Response r = run("snooze", p, days, List.of(lease.id(), lease.token(), absolute ? "a" : "d",
                Long.toString(ms), scriptChannel(p)));
        return "snoozed".equals(r.get(0).toString()) ? OptionalLong.of(r.get(1).toLong())
                : OptionalLong.empty();
    }

    /** Heartbeat; returns the ids whose lease is no longer ours. */
    public List<String> extend(Partition p, long leaseMs, List<Lease> leases) {
        return redis.await(extendAsync(p, leaseMs, leases));
    }

    /** As {@link #extend}, holding no thread: the heartbeat sends every partition's at once. */
    public Future<List<String>> extendAsync(Partition p, long leaseMs, List<Lease> leases) {
        List<String> args = new ArrayList<>(2 + leases.size() * 2);
        args.add(Long.toString(leaseMs));
        addLeases(args, leases);
        return runAsync("extend", p, Set.of(), args, 0, null).map(JobStore::ids);
    }

    /**
     * Moves up to {@code limit} expired leases back to due, after the retry backoff of the job's
     * lost attempts in a row, or to dead once they reach {@code maxLostAttempts}; a lost attempt
     * is counted apart ({@link JobRecord#lostAttempts()}), not in attempts. Leases whose token
     * starts with {@code ownHolder + ":"} are skipped: the caller holds them itself (empty: none
     * skipped). Returns {reclaimed, dead}.
     */
    public int[] reclaim(Partition p, int limit, int defaultMaxAttempts, int maxLostAttempts,
            Collection<String> heldTokens, long deadlineMs, long initialMs, double multiplier, long maxMs,
            double jitter) {
        // The backoff reaches past today's shard: pass the days up to its longest delay.
        Set<Integer> days = aroundNow();
        long localNow = System.currentTimeMillis();
        for (long at = localNow; at <= localNow + maxMs + DAY_MS; at += DAY_MS) {
            days.add(Keys.dayOf(at));
        }
        List<String> args = new ArrayList<>(List.of(Integer.toString(limit),
                Integer.toString(defaultMaxAttempts), scriptChannel(p), Long.toString(initialMs),
                Double.toString(multiplier), Long.toString(maxMs), Double.toString(jitter),
                Double.toString(java.util.concurrent.ThreadLocalRandom.current().nextDouble()),
                Integer.toString(maxLostAttempts), Long.toString(deadlineMs), callbackFlag(p),
                Integer.toString(heldTokens.size())));
        args.addAll(heldTokens);
        Response r = run("reclaim", p, days, args);
        if (r.get(1).toInteger() > 0) {
            calledBack(p);
        }
        return new int[] { r.get(0).toInteger(), r.get(1).toInteger() };
    }

    /** Drain: puts our unfinished jobs back, due now; returns how many were put back. */
    public int requeue(Partition p, List<Lease> leases) {
        return requeue(p, leases, null);
    }

    /** As above; {@code late} (if not null) gets a reply that arrives after the call timed out. */
    private int requeue(Partition p, List<Lease> leases, Consumer<Response> late) {
        return redis.await(requeueAsync(p, leases, late));
    }

    /** As {@link #requeue}, holding no thread (the drain sends every partition's at once). */
    public Future<Integer> requeueAsync(Partition p, List<Lease> leases) {
        return requeueAsync(p, leases, null);
    }

    private Future<Integer> requeueAsync(Partition p, List<Lease> leases, Consumer<Response> late) {
        List<String> args = new ArrayList<>(2 + leases.size() * 2);
        args.add(scriptChannel(p));
        addLeases(args, leases);
        return runAsync("requeue", p, aroundNow(), args, 0, late).map(Response::toInteger);
    }

    // ---------------------------------------------------------------- dead-job callbacks

    private String callbackFlag(Partition p) {
        return callbackTopics.contains(p.topic()) ? "1" : "0";
    }

    private void calledBack(Partition p) {
        if (callbackTopics.contains(p.topic())) {
            onCallback.accept(p);
        }
    }

    /** Who to tell when a burial here recorded a dead-job callback (the callback sender). */
    public void onCallbackRecorded(Consumer<Partition> listener) {
        this.onCallback = listener;
    }

    /** A dead-job callback read from Redis (see {@link Keys#callbackData}). */
    public record DeadCallback(Partition partition, String member, String id, long diedAt, int tries, String lastError,
            JobRecord record) {
        /** Reads a callback from its member and its {@link Keys#callbackData} value. */
        public static DeadCallback parse(Partition p, String member, String data) {
            int c1 = data.indexOf(','), c2 = data.indexOf(',', c1 + 1), nl = data.indexOf('\n', c2 + 1);
            return new DeadCallback(p, member, member.substring(member.indexOf(':') + 1),
                    Long.parseLong(data.substring(c1 + 1, c2)), Integer.parseInt(data.substring(0, c1)),
                    data.substring(c2 + 1, nl), JobRecord.decode(data.substring(nl + 1)));
        }
    }

    /**
     * Claims up to {@code limit} due dead-job callbacks of a partition for {@code claimMs} (their
     * tries counted); another replica takes them again after that unless they are settled.
     */
    public Future<List<DeadCallback>> takeCallbacksAsync(Partition p, int limit, long claimMs) {
        return runAsync("cbtake", p, Set.of(), List.of(Integer.toString(limit), Long.toString(claimMs)), 0, null)
                .map(r -> {
                    List<DeadCallback> out = new ArrayList<>(r.size() / 2);
                    for (int i = 0; i + 1 < r.size(); i += 2) {
                        out.add(DeadCallback.parse(p, r.get(i).toString(), r.get(i + 1).toString()));
                    }
                    return out;
                });
    }

    /**
     * When the partition's earliest dead-job callback is due (epoch ms by Redis' clock), -1 when it
     * has none: one plain read, so that a poll of a partition without due callbacks costs one command.
     */
    public Future<Long> nextCallbackAsync(Partition p) {
        return ensureLayoutAsync().compose(v -> redis.sendAsync(
                Request.cmd(Command.ZRANGE).arg(keys.callbacks(p)).arg(0).arg(0).arg("WITHSCORES")))
                .map(r -> {
                    if (r == null || r.size() == 0) {
                        return -1L;
                    }
                    // RESP2 answers [member, score]; RESP3 [[member, score]].
                    Response score = r.get(0).type() == io.vertx.redis.client.ResponseType.MULTI ? r.get(0).get(1) : r.get(1);
                    return (long) Double.parseDouble(score.toString());
                });
    }

    /** The earliest callback of each key: a read only, so that one command covers every partition. */
    private static final String CALLBACK_HEADS = "local o = {} for i, k in ipairs(KEYS) do "
            + "local r = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES') o[i] = r[2] or '-1' end return o";

    /**
     * {@link #nextCallbackAsync} of each partition: on a single Redis one command for them all (a
     * read-only script, Redis caches it), on a cluster one per partition (their keys are in other slots).
     */
    public List<Future<Long>> nextCallbacksAsync(List<Partition> ps) {
        List<Future<Long>> out = new ArrayList<>(ps.size());
        if (cluster || ps.size() < 2) {
            ps.forEach(p -> out.add(nextCallbackAsync(p)));
            return out;
        }
        Future<Response> all = ensureLayoutAsync().compose(v -> {
            Request eval = Request.cmd(Command.EVAL).arg(CALLBACK_HEADS).arg(ps.size());
            ps.forEach(p -> eval.arg(keys.callbacks(p)));
            return redis.sendAsync(eval);
        });
        for (int i = 0; i < ps.size(); i++) {
            int at = i;
            out.add(all.map(r -> (long) Double.parseDouble(r.get(at).toString())));
        }
        return out;
    }

    /** How one try of a callback ended. */
    public enum CallbackOutcome {
        DONE("done"), RETRY("retry"), FAILED("failed");

        final String arg;

        CallbackOutcome(String arg) {
            this.arg = arg;
        }
    }

    /**
     * Failed dead-job callbacks kept per partition (the newest; each keeps a copy of its job's
     * payload, so older ones are dropped with their data as new ones fail).
     */
    public static final int FAILED_CALLBACKS_KEPT = 1000;

    /**
     * Settles a claimed callback; false when it was no longer pending (settled by another replica)
     * or, for a retry or a failure, no longer this claim's ({@link DeadCallback#tries} is the claim's
     * token: a claim that expired and was taken again by another replica changes nothing but "done").
     */
    public Future<Boolean> settleCallbackAsync(DeadCallback c, CallbackOutcome outcome, long delayMs, String error) {
        return runAsync("cbsettle", c.partition(), Set.of(), List.of(c.member(), outcome.arg, Long.toString(delayMs),
                oneLine(error), Integer.toString(c.tries()), Integer.toString(FAILED_CALLBACKS_KEPT)), 0, null)
                .map(r -> r.toInteger() == 1);
    }

    /** Callbacks of the topic that failed for good, newest first, at most {@code limit} per partition. */
    public List<DeadCallback> failedCallbacks(String topic, int limit) {
        List<DeadCallback> out = new ArrayList<>();
        for (Partition p : partitionsOf(topic)) {
            Response members = redis.send(
                    Request.cmd(Command.ZREVRANGE).arg(keys.callbacksFailed(p)).arg(0).arg(limit - 1));
            if (members == null || members.size() == 0) {
                continue;
            }
            Request hmget = Request.cmd(Command.HMGET).arg(keys.callbackData(p));
            members.forEach(m -> hmget.arg(m.toString()));
            Response data = redis.send(hmget);
            for (int i = 0; i < members.size(); i++) {
                if (data.get(i) != null) {
                    out.add(DeadCallback.parse(p, members.get(i).toString(), data.get(i).toString()));
                }
            }
        }
        out.sort((a, b) -> Long.compare(b.diedAt(), a.diedAt()));
        return out;
    }

    // ---------------------------------------------------------------- plumbing

    /**
     * Reads of keys in several partitions: one pipelined batch on a single Redis; on a cluster,
     * where a batch must stay on one node, every read sent at once on its own.
     */
    private List<Response> readAll(List<Request> reads) {
        return cluster ? redis.sendEach(reads) : redis.batch(reads);
    }

    /**
     * Runs a script on a partition with the shards of {@code days}; when the script names days
     * it needs and was not given (DQNEEDDAY), adds them and runs it again.
     */
    private Response run(String script, Partition p, Set<Integer> days, List<String> args) {
        return run(script, p, days, args, 0, null);
    }

    /**
     * As above; with {@code replicas} &gt; 0 the reply waits until the writes reached that many
     * replicas; {@code late} (if not null) gets a reply that arrives after the call timed out.
     */
    private Response run(String script, Partition p, Set<Integer> days, List<String> args, int replicas,
            Consumer<Response> late) {
        return redis.await(runAsync(script, p, days, args, replicas, late));
    }

    /** As {@link #run(String, Partition, Set, List, int, Consumer)}, holding no thread. */
    private Future<Response> runAsync(String script, Partition p, Set<Integer> days, List<String> args, int replicas,
            Consumer<Response> late) {
        Set<Integer> shardDays = days instanceof TreeSet<Integer> mutable ? mutable : new TreeSet<>(days);
        return ensureLayoutAsync().recover(JobStore::notSent)
                .compose(v -> runWithDays(script, p, shardDays, args, replicas, late, 0));
    }

    /** A failure before the script was sent: it certainly did nothing ({@link StoreUnavailableException#refused()}). */
    private static <T> Future<T> notSent(Throwable e) {
        return Future.failedFuture(e instanceof StoreUnavailableException u && !u.refused()
                ? new StoreUnavailableException(u.getMessage(), u, true)
                : e);
    }

    private Future<Response> runWithDays(String script, Partition p, Set<Integer> shardDays, List<String> args,
            int replicas, Consumer<Response> late, int attempt) {
        List<String> k = new ArrayList<>(16 + shardDays.size());
        k.add(keys.jobs(p));
        k.add(keys.days(p));
        k.add(keys.next(p));
        k.add(keys.inflight(p));
        k.add(keys.leases(p));
        k.add(keys.dead(p));
        k.add(keys.leaseNext(p));
        k.add(keys.done(p));
        k.add(keys.ticks(p));
        k.add(keys.paused(p));
        k.add(keys.rateLimit(p));
        k.add(keys.rateTat(p));
        k.add(keys.forgotten(p));
        k.add(keys.callbacks(p));
        k.add(keys.callbackData(p));
        k.add(keys.callbacksFailed(p));
        List<String> a = new ArrayList<>(1 + shardDays.size() + args.size());
        a.add(Integer.toString(shardDays.size()));
        for (int day : shardDays) {
            k.add(keys.due(p, day));
            a.add(Integer.toString(day));
        }
        a.addAll(args);
        Future<Response> call = replicas > 0 ? scripts.runReplicatedAsync(script, k, a, replicas, durableWaitMs)
                : scripts.runAsync(script, k, a, late);
        return call.recover(e -> {
            String m = e instanceof RedisReplyException ? e.getMessage() : null;
            int at = m == null ? -1 : m.indexOf("DQNEEDDAY ");
            if (at < 0 || attempt >= 3) {
                return Future.failedFuture(e);
            }
            for (String d : m.substring(at + "DQNEEDDAY ".length()).trim().split("\\s+")) {
                shardDays.add(Integer.parseInt(d.trim()));
            }
            return runWithDays(script, p, shardDays, args, replicas, late, attempt + 1);
        });
    }

    /** Yesterday, today and tomorrow by this host's clock: covers Redis' "now" despite skew. */
    private static Set<Integer> aroundNow() {
        Set<Integer> days = new TreeSet<>();
        aroundDay(days, System.currentTimeMillis());
        return days;
    }

    private static void aroundDay(Set<Integer> days, long ms) {
        days.add(Keys.dayOf(ms - DAY_MS));
        days.add(Keys.dayOf(ms));
        days.add(Keys.dayOf(ms + DAY_MS));
    }

    private static String oneLine(String s) {
        // RS and US mark the trace context and the lost attempts in the record's error field.
        String line = s == null ? ""
                : s.replace('\n', ' ').replace('\r', ' ').replace('\u001e', ' ').replace('\u001f', ' ');
        return line.length() > 500 ? line.substring(0, 500) + "..." : line;
    }
}
