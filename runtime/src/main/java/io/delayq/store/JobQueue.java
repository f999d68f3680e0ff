package io.delayq.store;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import org.jboss.logging.Logger;

import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * The job path, what every job goes through: enqueue (one atomic script per topic partition),
 * take with a lease, then ack, fail, snooze, or a lease extended, reclaimed when it expired, put
 * back by a drain; and the cheap reads of the loops that drive it (the safety-net poll's heads,
 * the reclaimer's earliest deadline). Each move of a job is one script.
 */
@Singleton
public class JobQueue extends StorePart {
    private static final Logger LOG = Logger.getLogger(JobQueue.class);
    private final TopicListing listing;
    private final IdClaims claims;
    private final ResultRetention results;

    @Inject
    public JobQueue(StoreLayer layer) {
        super(layer);
        this.results = layer.results();
        this.listing = layer.listing();
        this.claims = new IdClaims(layer);
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
     * {@link JobInfo#created()} tells new jobs from existing ids, {@link JobInfo#replaced()} the
     * scheduled jobs a replace or extend changed ({@link NewJob#ifExists()}). {@code trace} is the compact W3C
     * context of the enqueue (see {@link JobRecord#trace()}), empty when it ran in no trace.
     */
    public List<JobInfo> enqueue(Partition p, List<NewJob> jobs, String trace) {
        return redis.await(enqueueAsync(p, jobs, trace));
    }

    /** As {@link #enqueue}, holding no thread. */
    public Future<List<JobInfo>> enqueueAsync(Partition p, List<NewJob> jobs, String trace) {
        return enqueueScript(p, jobs, trace, "", "0").map(reply -> counted(p, jobs, reply));
    }

    /**
     * The id claims of a call over several partitions, made before any is written (see
     * {@link #claimAllAsync}); pass it to {@link #enqueueAsync(Partition, List, String, Claims)},
     * then to {@link #claimsDone}.
     */
    public static final class Claims {
        static final Claims NONE = new Claims(List.of());
        final List<IdClaims.Written> written;
        /** The ids the enqueues answered as living in their partition (see {@link IdClaims#done(List, Set)}). */
        final Set<String> live = java.util.concurrent.ConcurrentHashMap.newKeySet();

        Claims(List<IdClaims.Written> written) {
            this.written = written;
        }
    }

    /**
     * For a batch over several partitions (with {@code delayq.partitions} above 1): claims the ids
     * of the jobs of a group that go to another partition than their id's home, and checks the
     * claims on the others, before any partition is written, so that an id that is a job elsewhere
     * refuses the batch ({@link io.delayq.core.IdTakenException}) with nothing written. One
     * partition (or one partition in the call): nothing to do here, the enqueue does it.
     */
    public Future<Claims> claimAllAsync(Map<Partition, List<NewJob>> parts) {
        if (partitions == 1 || parts.size() < 2) {
            return Future.succeededFuture(Claims.NONE);
        }
        List<Future<List<IdClaims.Written>>> made = new ArrayList<>();
        parts.forEach((p, jobs) -> made.add(claims.claim(p, jobs)));
        return Future.join(made).transform(all -> {
            List<IdClaims.Written> written = new ArrayList<>();
            made.stream().filter(Future::succeeded).forEach(f -> written.addAll(f.result()));
            Future<Void> checked = all.failed() ? Future.failedFuture(all.cause())
                    : Future.all(parts.entrySet().stream().map(e -> claims.checkHome(e.getKey(), e.getValue())).toList())
                            .mapEmpty();
            return checked.transform(c -> c.succeeded() ? Future.succeededFuture(new Claims(written))
                    : claims.done(written).transform(v -> Future.<Claims> failedFuture(c.cause())));
        });
    }

    /** As {@link #enqueueAsync(Partition, List, String)}, with its ids claimed before ({@link #claimAllAsync}). */
    public Future<List<JobInfo>> enqueueAsync(Partition p, List<NewJob> jobs, String trace, Claims claimed) {
        if (claimed == Claims.NONE) {
            return enqueueAsync(p, jobs, trace);
        }
        return enqueueScript(p, jobs, null, trace, "", "0", false).map(reply -> {
            claimed.live.addAll(IdClaims.live(jobs, reply));
            return counted(p, jobs, reply);
        });
    }

    /** Marks the claims of {@link #claimAllAsync} done once their enqueues ran (or were refused). */
    public Future<Void> claimsDone(Claims claimed) {
        return claims.done(claimed.written, claimed.live);
    }

    /**
     * As {@link #claimsDone(Claims)} when {@code all}; else (an enqueue of the call has an unknown
     * outcome: its claims stay pending, they lapse) only the claims of the jobs that the enqueues
     * answered as living in their partition, so that a dead job of their id in its home goes now.
     */
    public Future<Void> claimsDone(Claims claimed, boolean all) {
        return all ? claimsDone(claimed)
                : claims.done(claimed.written.stream().filter(w -> claimed.live.contains(w.id())).toList(), claimed.live);
    }

    /**
     * As {@link #enqueueAsync}, for the rows of a transactional outbox (quarkus-delayq-outbox):
     * {@code tokens.get(i)} is the unique token of job i's row. A token this partition relayed in
     * the last 24 h ({@link Keys#relayed}) is not enqueued again, whatever became of its job (its
     * result then says {@link JobInfo#created()} false), so that a relay that crashed before it
     * deleted its rows runs no job twice; the others are enqueued exactly as {@link #enqueueAsync}
     * would, and remembered in the same script.
     */
    public Future<List<JobInfo>> relayAsync(Partition p, List<NewJob> jobs, List<String> tokens, String trace) {
        if (tokens.size() != jobs.size()) {
            throw new IllegalArgumentException(tokens.size() + " tokens for " + jobs.size() + " jobs");
        }
        return enqueueScript(p, jobs, tokens, trace, "", "0").map(reply -> counted(p, jobs, reply));
    }

    /**
     * An enqueue's reply read ({@link #parseEnqueue}) and counted: the dead jobs its burials
     * trimmed (k and their ids after the jobs' values, see enqueue.lua), then {@link #counted(Partition, List)}.
     */
    List<JobInfo> counted(Partition p, List<NewJob> jobs, Response reply) {
        List<JobInfo> infos = parseEnqueue(p, jobs, reply);
        int at = 1 + 4 * jobs.size();
        if (reply.size() > at && !"relist".equals(reply.get(at).toString())) {
            int k = reply.get(at).toInteger();
            List<String> ids = new ArrayList<>(k);
            for (int i = 1; i <= k; i++) {
                ids.add(reply.get(at + i).toString());
            }
            layer.trimmed(p, ids);
        }
        return counted(p, infos);
    }

    /** Counts the new jobs of an enqueue for the history (ids kept or replaced are not new). */
    List<JobInfo> counted(Partition p, List<JobInfo> infos) {
        // A replace or extend that left a job due after its expiresAt sent it to dead (enqueue.lua).
        int expired = 0;
        for (JobInfo info : infos) {
            if (info.replaced() && info.state() == JobState.DEAD) {
                expired++;
            }
        }
        if (expired > 0) {
            layer.expired(p, expired);
            layer.calledBack(p);
        }
        if (layer.history().enabled()) {
            int created = 0;
            for (JobInfo info : infos) {
                if (info.created()) {
                    created++;
                }
            }
            layer.history().enqueued(p.topic(), created);
        }
        return infos;
    }

    /** What this replica counts for the history (see {@link HistoryStore}). */
    public HistoryCounts history() {
        return layer.history();
    }

    /**
     * The enqueue script's call; {@code schedule} non-empty when it fires that schedule's tick,
     * {@code tick} its epoch ms, with an {@code o} after it when the schedule's overlap is skip
     * (see enqueue.lua).
     */
    Future<Response> enqueueScript(Partition p, List<NewJob> jobs, String trace, String schedule, String tick) {
        return enqueueScript(p, jobs, null, trace, schedule, tick);
    }

    /** As above; {@code tokens} (null: none) the outbox rows' tokens of {@link #relayAsync}. */
    private Future<Response> enqueueScript(Partition p, List<NewJob> jobs, List<String> tokens, String trace, String schedule,
            String tick) {
        return enqueueScript(p, jobs, tokens, trace, schedule, tick, true);
    }

    /** As above; {@code claim} false when the caller claimed the ids already ({@link #claimAllAsync}). */
    private Future<Response> enqueueScript(Partition p, List<NewJob> jobs, List<String> tokens, String trace, String schedule,
            String tick, boolean claim) {
        Set<Integer> days = new TreeSet<>();
        long localNow = System.currentTimeMillis();
        List<String> args = new ArrayList<>(7 + jobs.size() * 12);
        args.add(scriptChannel(p));
        args.add(JobRecord.storableTrace(trace));
        args.add(dedupWindow(p.topic()));
        args.add(schedule);
        args.add(tick);
        args.add(Integer.toString(jobs.size()));
        for (int i = 0; i < jobs.size(); i++) {
            NewJob job = jobs.get(i);
            if (job.delayed()) {
                aroundDay(days, localNow + job.millis());
            } else {
                days.add(Keys.dayOf(job.millis()));
            }
            if (job.priority() != null && job.priority() != 3) {
                // Its lane's shards (see lib.lua's lanes); a replace's old lane the script names.
                Set<Integer> lane = new TreeSet<>();
                if (job.delayed()) {
                    aroundDay(lane, localNow + job.millis());
                } else {
                    lane.add(Keys.dayOf(job.millis()));
                }
                lane.forEach(d -> days.add(Keys.laneCode(job.priority(), d)));
            }
            args.add(job.id());
            args.add(job.delayed() ? "d" : "a");
            args.add(Long.toString(job.millis()));
            args.add(Integer.toString(job.maxAttempts()));
            args.add(job.payloadJson() == null ? "" : job.payloadJson());
            args.add(job.ifExists().letter());
            args.add(JobRecord.encodeRetry(job.retry()));
            args.add(job.group() == null ? "" : job.group());
            args.add(tokens == null ? "" : tokens.get(i));
            args.add(job.timeoutMs() == null ? "" : job.timeoutMs().toString());
            args.add(job.expiresAt() == null ? "" : job.expiresAt().toString());
            args.add(job.priority() == null ? "" : job.priority().toString());
        }
        // After the jobs: the burial of a replaced or extended job that would be due after its expiresAt.
        args.add(layer.burial(p));
        // One job with neither a dedup window nor a tick that keeps an existing id (most calls):
        // the script of fewer commands. A replace or extend reads the job first, as a batch does.
        String script = jobs.size() == 1 && tokens == null && schedule.isEmpty() && !dedupWindows.containsKey(p.topic())
                && jobs.get(0).ifExists() == io.delayq.core.IfExists.KEEP ? "enqueue1" : "enqueue";
        if (partitions == 1) {
            return send(script, p, days, args, jobs);
        }
        if (!claim) {
            return sendHome(script, p, days, args, jobs, 0);
        }
        // An id is one job over the topic's partitions (see IdClaims): the jobs that go here
        // though their id's home is another partition are claimed there first; the claims are
        // marked done once this call ran, or was refused (a call whose outcome is unknown leaves
        // them pending: they lapse). A dead job of an id in its home goes only with the claim
        // marked done after its new job was written here.
        return claims.claim(p, jobs).compose(written -> sendHome(script, p, days, args, jobs, 0)
                .transform(ran -> (ran.succeeded() || ran.cause() instanceof io.delayq.core.IdTakenException
                        ? claims.done(written, ran.succeeded() ? IdClaims.live(jobs, ran.result()) : Set.of())
                        : Future.<Void> succeededFuture())
                        .transform(v -> ran.succeeded() ? Future.succeededFuture(ran.result()) : Future.<Response> failedFuture(ran.cause()))));
    }

    /**
     * The script, until it answers other than "claimed": a claimed id (its job went to another
     * partition with its group) whose claim stands refuses the call ({@link io.delayq.core.IdTakenException});
     * a stale one is dropped and the call sent again (a few rounds: each is a claim that lapsed).
     */
    private Future<Response> sendHome(String script, Partition p, Set<Integer> days, List<String> args, List<NewJob> jobs,
            int round) {
        return send(script, p, days, args, jobs).compose(reply -> {
            if (!IdClaims.claimed(reply)) {
                return Future.succeededFuture(reply);
            }
            if (round + 1 >= IdClaims.ROUNDS) {
                NewJob first = jobs.get(reply.get(2).toInteger() - 1);
                return Future.failedFuture(new io.delayq.core.IdTakenException(first.id(),
                        IdClaims.Claim.parse(reply.get(3).toString()).group()));
            }
            return claims.dropStale(p, jobs, reply).compose(v -> sendHome(script, p, days, args, jobs, round + 1));
        });
    }

    private Future<Response> send(String script, Partition p, Set<Integer> days, List<String> args, List<NewJob> jobs) {
        return listing.listed(p.topic(), () -> {
            beforeEnqueue.accept(p);
            return runAsync(script, p, days, args, durableReplicas, null, partitions > 1);
        }).compose(reply -> listing.relistIfForgotten(p.topic(), reply))
                .recover(e -> Future.failedFuture(e instanceof NotReplicatedException n ? notReplicated(n, jobs) : e));
    }

    private static NotReplicatedException notReplicated(NotReplicatedException e, List<NewJob> jobs) {
        List<String> ids = jobs.stream().map(NewJob::id).toList();
        return new NotReplicatedException("Redis has the job(s) but " + e.getMessage() + ": they may exist; retry"
                + " with the same id(s): " + (ids.size() > 20 ? ids.subList(0, 20) + " and " + (ids.size() - 20)
                        + " more" : ids));
    }

    static List<JobInfo> parseEnqueue(Partition p, List<NewJob> jobs, Response reply) {
        List<JobInfo> out = new ArrayList<>(jobs.size());
        for (int i = 0; i < jobs.size(); i++) {
            int base = 1 + i * 4;
            JobState state = JobState.ofLetter(reply.get(base + 3).toString());
            if (state == JobState.SUCCEEDED) {
                out.add(JobInfo.succeeded(jobs.get(i).id(), p.topic(), Instant.ofEpochMilli(reply.get(base + 1).toLong())));
                continue;
            }
            Instant runAt = Instant.ofEpochMilli(reply.get(base + 1).toLong());
            int code = reply.get(base).toInteger();
            if (JobState.cancellingLetter(reply.get(base + 3).toString())) {
                out.add(JobInfo.cancelling(jobs.get(i).id(), p.topic(), runAt, reply.get(base + 2).toInteger()));
                continue;
            }
            out.add(code == 2 ? JobInfo.replaced(jobs.get(i).id(), p.topic(), runAt, state, reply.get(base + 2).toInteger())
                    : JobInfo.enqueued(jobs.get(i).id(), p.topic(), runAt, state, reply.get(base + 2).toInteger(),
                            code == 1));
        }
        return out;
    }

    // ---------------------------------------------------------------- leases

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

    /** The most shard codes a taker keeps between takes ({@code olderDays}): 5 x 32 + 8, rounded up. */
    static final int MAX_OLDER_DAYS = 192;

    /**
     * As {@link #take}, holding no thread: the takers of a replica share a few threads. The caller
     * must leave {@code olderDays} alone until the future completes (it is updated before).
     */
    public Future<TakeResult> takeAsync(Partition p, int limit, long leaseMs, String tokenPrefix, Set<Integer> olderDays,
            List<Lease> acks, long deadlineMs) {
        Set<Integer> around = new TreeSet<>();
        aroundDay(around, hostClock.getAsLong());
        Set<Integer> days = new TreeSet<>(around);
        days.addAll(olderDays);
        List<String> args = new ArrayList<>(14 + acks.size() * 2);
        args.add(Integer.toString(limit));
        args.add(Long.toString(leaseMs));
        args.add(tokenPrefix);
        args.add(Long.toString(deadlineMs));
        args.add(dedupWindow(p.topic()));
        args.add(Double.toString(rateLimits.getOrDefault(p.topic(), 0.0)));
        args.add(Integer.toString(partitions));
        args.add(Integer.toString(maxInFlights.getOrDefault(p.topic(), 0)));
        args.add(Integer.toString(p.index()));
        args.add(scriptChannel(p));
        args.add(Integer.toString(groupMaxInFlights.getOrDefault(p.topic(), 0)));
        args.add(layer.burial(p)); // for the due jobs whose expiresAt has passed
        args.add(Double.toString(groupRateLimits.getOrDefault(p.topic(), 0.0)));
        results.addAcks(args, p, acks);
        // A reply that comes after we stopped waiting for it (Redis ran the take before the
        // deadline, the reply was slow): its jobs are leased to a token nobody holds. Put them
        // back at once rather than let them lose an attempt when the lease expires. Its burials
        // of expired jobs happened all the same: counted, their callbacks and trims told.
        return runAsync("take", p, days, args, 0, late -> {
            expiredInTake(p, late);
            List<Lease> orphans = parseTake(p, tokenPrefix, late).jobs().stream().map(TakenJob::lease).toList();
            if (!orphans.isEmpty()) {
                Thread.ofVirtual().name("delayq-late-take").start(() -> requeueOrphans(p, orphans));
            }
        }, false, results.keeps(p.topic())).map(r -> {
            days.removeAll(around);
            forgetPassedDays(days, olderDays, r.get(0).toLong(), r.get(1).toLong());
            // A bound: days emptied long ago are simply learnt again if still needed. One take may
            // need 32 plain days and 32 of each of the four lanes, plus today's and tomorrow's of
            // every lane (a group rate limit): below that, a backlog over many days and lanes would
            // clear the set on every take and learn it again (a DQNEEDDAY round trip each time).
            if (days.size() > MAX_OLDER_DAYS) {
                days.clear();
            }
            olderDays.clear();
            olderDays.addAll(days);
            expiredInTake(p, r);
            return parseTake(p, tokenPrefix, r);
        });
    }

    /**
     * Drops from a taker's codes the days before yesterday (Redis' day), lane codes included, that it
     * had before this take ({@code given}), once the take's "next" (the earliest runAt of the
     * partition's plain and lane shards, a lower bound; -1 = none) is not before yesterday: their
     * shards are empty. Lane codes learnt for their own day (a lane job of today, tomorrow's shards
     * under a group rate limit set by an operator) would otherwise stay long after, a key more on
     * every take, until the bound clears the set; a backlog keeps its codes while it lasts, and the
     * codes a take just learnt stay for the next. A code dropped that a script still needs is only
     * learnt again.
     */
    static void forgetPassedDays(Set<Integer> days, Set<Integer> given, long redisNow, long next) {
        int yesterday = Keys.dayOf(redisNow - DAY_MS);
        if (next < 0 || Keys.dayOf(next) >= yesterday) {
            days.removeIf(code -> code % Keys.LANE < yesterday && given.contains(code));
        }
    }

    private static TakeResult parseTake(Partition p, String tokenPrefix, Response r) {
        long now = r.get(0).toLong();
        long next = r.get(1).toLong();
        long notBefore = r.get(2).toLong();
        long heldUntil = r.get(3).toLong();
        int staleCount = r.get(4).toInteger();
        List<String> stale = new ArrayList<>(staleCount);
        for (int i = 0; i < staleCount; i++) {
            stale.add(r.get(5 + i).toString());
        }
        int at = 5 + staleCount;
        at += 1 + r.get(at).toInteger(); // the expired ids (see expiredInTake)
        at += 1 + r.get(at).toInteger(); // the ids their burials trimmed
        List<TakenJob> jobs = new ArrayList<>((r.size() - at) / 2);
        for (int i = at, n = 1; i < r.size(); i += 2, n++) {
            String rec = r.get(i + 1).toString();
            jobs.add(new TakenJob(p, new Lease(r.get(i).toString(), tokenPrefix + n),
                    rec.isEmpty() ? null : JobRecord.decode(rec)));
        }
        return new TakeResult(now, next, jobs, stale, notBefore, heldUntil);
    }

    /** The due jobs a take buried because their expiresAt had passed: counted, their callbacks and trims told. */
    private void expiredInTake(Partition p, Response r) {
        int at = 5 + r.get(4).toInteger();
        int expired = r.get(at).toInteger();
        if (expired == 0) {
            return;
        }
        layer.expired(p, expired);
        layer.calledBack(p);
        int trimmedAt = at + 1 + expired;
        int trimmed = r.get(trimmedAt).toInteger();
        if (trimmed > 0) {
            List<String> ids = new ArrayList<>(trimmed);
            for (int i = 0; i < trimmed; i++) {
                ids.add(r.get(trimmedAt + 1 + i).toString());
            }
            layer.trimmed(p, ids);
        }
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
        args.add(scriptChannel(p));
        results.addAcks(args, p, leases);
        // Today's shard: an acked job of a group releases the group's next held job into it.
        return runAsync("ack", p, aroundNow(), args, 0, null, false, results.keeps(p.topic())).map(StorePart::ids);
    }

    /** Whether the topic keeps its succeeded jobs and their results ({@code delayq.topics.<t>.result-retention}). */
    public boolean keepsResults(String topic) {
        return results.keeps(topic);
    }

    /**
     * Gives the ack of {@code lease}, queued next, the result to keep: a field made by
     * {@link ResultRetention#kept}, {@link ResultRetention#dropped} or {@link ResultRetention#cut}.
     * Held until {@link #acksSettled} (an ack that fails is sent again with it).
     */
    public void stageResult(Lease lease, String field) {
        results.stage(lease, field);
    }

    /** The result field staged for the ack of {@code lease} (as the script gets it); null for none. */
    public String stagedResult(Lease lease) {
        return results.staged(lease);
    }

    /** Acks that reached Redis (or were found stale): their staged results go. */
    public void acksSettled(Collection<Lease> leases) {
        results.settled(leases);
    }

    /** Records a failed attempt: retry after {@code delayMs}, or dead after the last attempt. */
    public FailOutcome fail(Partition p, Lease lease, long delayMs, String error, int defaultMaxAttempts) {
        return fail(p, lease, delayMs, error, defaultMaxAttempts, false);
    }

    /** As above; a {@code permanent} failure is dead at once, whatever attempts remain. */
    public FailOutcome fail(Partition p, Lease lease, long delayMs, String error, int defaultMaxAttempts,
            boolean permanent) {
        // And today's: a job of a group releases the group's next held job into it.
        Set<Integer> days = aroundNow();
        aroundDay(days, System.currentTimeMillis() + delayMs);
        // With the result retention's keys: a job that dies or is cancelled takes the kept success
        // of an earlier job of its id with it (lib.lua's forget_kept).
        Response r = redis.await(runAsync("fail", p, days, List.of(lease.id(), lease.token(), Long.toString(delayMs),
                oneLine(error), Integer.toString(defaultMaxAttempts), scriptChannel(p), permanent ? "1" : "0",
                layer.burial(p)), 0, null, false, results.keeps(p.topic())));
        return switch (r.get(0).toString()) {
            case "retry" -> new FailOutcome(FailOutcome.Kind.RETRY, r.get(1).toLong(), r.get(2).toInteger());
            case "dead" -> {
                layer.calledBack(p);
                layer.trimmed(p, r, 3);
                yield new FailOutcome(FailOutcome.Kind.DEAD, r.get(1).toLong(), r.get(2).toInteger());
            }
            case "expired" -> {
                // Its retry would have been due after its expiresAt: dead as after its last attempt.
                layer.expired(p, 1);
                layer.calledBack(p);
                layer.trimmed(p, r, 3);
                yield new FailOutcome(FailOutcome.Kind.DEAD, r.get(1).toLong(), r.get(2).toInteger());
            }
            case "cancelled" -> new FailOutcome(FailOutcome.Kind.CANCELLED, 0, 0);
            default -> new FailOutcome(FailOutcome.Kind.STALE, 0, 0);
        };
    }

    /**
     * Ends a snoozed attempt: the job is due again {@code ms} after Redis now ({@code absolute}
     * false) or at epoch ms {@code ms} (true), its attempt not counted. Returns the new runAt, or
     * empty when the lease was no longer ours (nothing changed), or when that runAt would be after
     * the job's expiresAt (it went to the dead set instead, as expired).
     */
    public OptionalLong snooze(Partition p, Lease lease, boolean absolute, long ms) {
        Set<Integer> days = aroundNow(); // today's too, as for fail
        aroundDay(days, absolute ? Math.max(ms, System.currentTimeMillis()) : System.currentTimeMillis() + ms);
        // With the result retention's keys, as for fail: a job that expires or is cancelled here
        // takes the kept success of an earlier job of its id with it.
        Response r = redis.await(runAsync("snooze", p, days, List.of(lease.id(), lease.token(), absolute ? "a" : "d",
                Long.toString(ms), scriptChannel(p), layer.burial(p)), 0, null, false, results.keeps(p.topic())));
        if ("expired".equals(r.get(0).toString())) {
            layer.expired(p, 1);
            layer.calledBack(p);
            layer.trimmed(p, r, 2);
        }
        return "snoozed".equals(r.get(0).toString()) ? OptionalLong.of(r.get(1).toLong())
                : OptionalLong.empty();
    }

    /** Heartbeat; returns the ids whose lease is no longer ours. */
    public List<String> extend(Partition p, long leaseMs, List<Lease> leases) {
        return redis.await(extendAsync(p, leaseMs, leases)).lost();
    }

    /**
     * What one heartbeat of a partition learnt: {@code lost}, the ids whose lease is no longer ours;
     * {@code cancelled}, the ids among ours whose cancel was asked (their attempts must end).
     */
    public record Extended(List<String> lost, List<String> cancelled) {
    }

    /** As {@link #extend}, holding no thread (the heartbeat sends every partition's at once), with the cancelled ids. */
    public Future<Extended> extendAsync(Partition p, long leaseMs, List<Lease> leases) {
        List<String> args = new ArrayList<>(2 + leases.size() * 2);
        args.add(Long.toString(leaseMs));
        addLeases(args, leases);
        return runAsync("extend", p, Set.of(), args, 0, null)
                .map(r -> new Extended(StorePart.ids(r.get(0)), StorePart.ids(r.get(1))));
    }

    /**
     * The ids among {@code leases} whose cancel was asked (the lease carries the mark cancel.lua
     * sets): one read-only HMGET of the partition's leases, what the heartbeat sends between its
     * extends so that a cancel whose wake-up was lost still reaches its holder within
     * {@link #CANCEL_CHECK_MS} (plus a round trip).
     */
    public Future<List<String>> cancelledAsync(Partition p, List<Lease> leases) {
        Request hmget = Request.cmd(Command.HMGET).arg(keys.leases(p));
        for (Lease l : leases) {
            hmget.arg(l.id());
        }
        return ensureLayoutAsync().compose(v -> redis.sendAsync(hmget)).map(r -> {
            List<String> out = new ArrayList<>();
            for (int i = 0; i < leases.size(); i++) {
                Response token = r.get(i);
                if (token != null && token.toString().equals(leases.get(i).token() + CANCEL_MARK)) {
                    out.add(leases.get(i).id());
                }
            }
            return out;
        });
    }

    /** What cancel.lua appends to the lease token of a job in flight (lib.lua's CANCEL_MARK). */
    public static final String CANCEL_MARK = "!";

    /** How often the heartbeat reads the cancel marks of the leases it holds (between its extends). */
    public static final long CANCEL_CHECK_MS = 1000;

    /**
     * Moves up to {@code limit} expired leases back to due, after the retry backoff of the job's
     * lost attempts in a row, or to dead once they reach {@code maxLostAttempts}; a lost attempt
     * is counted apart ({@link JobRecord#lostAttempts()}), not in attempts. The backoff is the
     * topic's ({@code initialMs}, {@code multiplier}, {@code maxMs}, {@code jitter}), with a job's
     * own initial and max in place of the topic's when its record has them
     * ({@link JobRecord#retry()}, applied by the script as {@link io.delayq.core.JobRetry#applyTo}
     * does). Leases whose token
     * starts with {@code ownHolder + ":"} are skipped: the caller holds them itself (empty: none
     * skipped). A job whose cancel was asked is removed instead (its holder is gone). Returns
     * {reclaimed, dead, removed as cancelled}.
     */
    public int[] reclaim(Partition p, int limit, int defaultMaxAttempts, int maxLostAttempts,
            Collection<String> heldTokens, long deadlineMs, long initialMs, double multiplier, long maxMs,
            double jitter) {
        // The backoff reaches past today's shard: pass the days up to the topic's longest delay. A
        // job's own longer one the script names (DQNEEDDAY, before any write), and run adds it.
        Set<Integer> days = aroundNow();
        long localNow = System.currentTimeMillis();
        for (long at = localNow; at <= localNow + maxMs + DAY_MS; at += DAY_MS) {
            days.add(Keys.dayOf(at));
        }
        List<String> args = new ArrayList<>(List.of(Integer.toString(limit),
                Integer.toString(defaultMaxAttempts), scriptChannel(p), Long.toString(initialMs),
                Double.toString(multiplier), Long.toString(maxMs), Double.toString(jitter),
                Double.toString(java.util.concurrent.ThreadLocalRandom.current().nextDouble()),
                Integer.toString(maxLostAttempts), Long.toString(deadlineMs), layer.burial(p),
                Integer.toString(heldTokens.size())));
        args.addAll(heldTokens);
        Response r = redis.await(runAsync("reclaim", p, days, args, 0, null, false, results.keeps(p.topic())));
        int expired = r.size() > 3 ? r.get(3).toInteger() : 0;
        if (r.get(1).toInteger() > 0) {
            layer.calledBack(p);
            layer.trimmed(p, r, 4);
        }
        if (expired > 0) {
            layer.expired(p, expired);
        }
        return new int[] { r.get(0).toInteger(), r.get(1).toInteger(), r.size() > 2 ? r.get(2).toInteger() : 0 };
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
        return runAsync("requeue", p, aroundNow(), args, 0, late, false, results.keeps(p.topic())).map(Response::toInteger);
    }

    // ---------------------------------------------------------------- the loops' reads

    /**
     * What the safety-net poll reads of one partition: the lower bound of its due times (the
     * earlier of "next" and the lanes' "lnext"; -1 with nothing scheduled), the "leasenext" lower
     * bound of its lease deadlines (-1 with none), whether its topic is paused, and whether a take was held back by the topic's
     * concurrency cap with no slot freed since (its "capped" mark).
     */
    public record Head(long next, long leaseNext, boolean paused, boolean capped) {
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
                        Request.cmd(Command.MGET).arg(keys.next(p)).arg(keys.leaseNext(p)).arg(keys.paused(p))
                                .arg(keys.capped(p)).arg(keys.laneNext(p))))
                        .map(r -> head(r, 0)));
            }
            layout.compose(v -> redis.sendAsync(Request.cmd(Command.MGET).arg(keys.schedulesRevision())))
                    .onSuccess(r -> noteRevision(r.get(0), readAt));
            return out;
        }
        Future<Response> all = layout.compose(v -> {
            Request mget = Request.cmd(Command.MGET);
            ps.forEach(p -> mget.arg(keys.next(p)).arg(keys.leaseNext(p)).arg(keys.paused(p)).arg(keys.capped(p))
                    .arg(keys.laneNext(p)));
            mget.arg(keys.schedulesRevision());
            return redis.sendAsync(mget);
        }).onSuccess(r -> noteRevision(r.get(5 * ps.size()), readAt));
        for (int i = 0; i < ps.size(); i++) {
            int at = 5 * i;
            out.add(all.map(r -> head(r, at)));
        }
        return out;
    }

    private static Head head(Response r, int at) {
        Response next = r.get(at);
        Response leaseNext = r.get(at + 1);
        // The partition's head: the earlier of "next" (priority 3) and "lnext" (the lanes).
        Response laneNext = r.get(at + 4);
        long head = next == null ? -1 : next.toLong();
        if (laneNext != null && (head < 0 || laneNext.toLong() < head)) {
            head = laneNext.toLong();
        }
        return new Head(head,
                leaseNext == null ? -1 : (long) Double.parseDouble(leaseNext.toString()), r.get(at + 2) != null,
                r.get(at + 3) != null);
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
}
