package io.delayq.store;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import io.delayq.core.CancelOutcome;
import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.RescheduleResult;
import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * What an operator or the API reads of the store, and the operator's actions on one job: a job
 * by id (with its payload for the dashboard), cancel, reschedule; the topics with their counts,
 * the gauges, a topic's snapshot for the dashboard (peek); the dead set, and a dead job revived
 * or purged (the dead set as a whole, filtered, is {@link DeadSweep}'s). Kept apart from the
 * job path ({@link JobQueue}) as Sidekiq keeps api.rb apart from fetch.rb, and Asynq inspect.go
 * from rdb.go.
 */
@Singleton
public class Inspection extends StorePart {
    private final IdClaims claims;

    @Inject
    public Inspection(StoreLayer layer) {
        super(layer);
        this.claims = new IdClaims(layer);
    }

    // ---------------------------------------------------------------- one job

    public Optional<JobInfo> get(String topic, String id) {
        return redis.await(getAsync(topic, id));
    }

    /** As {@link #get}, holding no thread. */
    public Future<Optional<JobInfo>> getAsync(String topic, String id) {
        return byId(topic, id, p -> getCall(p, id), r -> r.size() > 0, Inspection::deadGet, Inspection::keptGet).map(r -> parseGet(topic, id, r).map(JobDetail::info));
    }

    /**
     * A call about one job by id: in the partition of its id, where a job of no group lives; when
     * that one answers "no such job" ({@code found} false) and the topic has several partitions,
     * in the others, one after the other: a job of a group lives in its group's partition (see
     * {@link #partitionOf(String, String, String)}). The first answer that found it, else the
     * last; only a miss pays for more than one call.
     */
    private Future<Response> byId(String topic, String id, java.util.function.Function<Partition, Future<Response>> call,
            java.util.function.Predicate<Response> found) {
        return byId(topic, id, call, found, r -> false, r -> false);
    }

    /**
     * As above; when the home answers with a dead job ({@code dead}) while the id is claimed there
     * (a job of a group took the id and the step that deletes the dead copy has not run yet, see
     * {@link IdClaims}), the other partitions are asked for the id's live job: the dead answer only
     * when none has it. One {@code HEXISTS} more for a dead job at home. An answer of a succeeded job
     * its topic keeps ({@code kept}), wherever it is found, is a past job of the id: the other
     * partitions are asked for a live one (a job of a group enqueued with the id since), the kept
     * one answered only when none has it.
     */
    private Future<Response> byId(String topic, String id, java.util.function.Function<Partition, Future<Response>> call,
            java.util.function.Predicate<Response> found, java.util.function.Predicate<Response> dead,
            java.util.function.Predicate<Response> kept) {
        Partition home = partitionOf(topic, id);
        Future<Response> first = call.apply(home);
        if (partitions == 1) {
            return first;
        }
        java.util.function.Predicate<Response> live = found.and(dead.negate()).and(kept.negate());
        java.util.function.Function<Response, Future<Response>> unlessKept = r -> !kept.test(r) ? Future.succeededFuture(r)
                : elsewhere(topic, home.index(), 0, r, call, live).map(e -> live.test(e) ? e : r);
        return first.compose(r -> !found.test(r) ? elsewhere(topic, home.index(), 0, r, call, found).compose(unlessKept)
                : kept.test(r) ? unlessKept.apply(r)
                : !dead.test(r) ? Future.succeededFuture(r)
                        : redis.sendAsync(Request.cmd(Command.HEXISTS).arg(keys.claims(home)).arg(id))
                                .compose(c -> c.toInteger() == 0 ? Future.succeededFuture(r)
                                        : elsewhere(topic, home.index(), 0, r, call, live).map(e -> live.test(e) ? e : r)));
    }

    /** get.lua on one partition, for a look-up: with the topic's dedup window and result retention. */
    private Future<Response> getCall(Partition p, String id) {
        long retention = layer.results().retentionMs(p.topic());
        return runAsync("get", p, Set.of(), List.of(id, dedupWindow(p.topic()), Long.toString(retention)), 0, null,
                false, retention > 0);
    }

    /** Whether get.lua answered a succeeded job kept by its topic's result retention. */
    private static boolean keptGet(Response r) {
        return r.size() > 1 && "r".equals(r.get(1).toString());
    }

    /** Whether get.lua answered a dead job. */
    private static boolean deadGet(Response r) {
        return r.size() > 1 && "d".equals(r.get(1).toString());
    }

    private Future<Response> elsewhere(String topic, int home, int i, Response last,
            java.util.function.Function<Partition, Future<Response>> call, java.util.function.Predicate<Response> found) {
        if (i >= partitions) {
            return Future.succeededFuture(last);
        }
        if (i == home) {
            return elsewhere(topic, home, i + 1, last, call, found);
        }
        return call.apply(new Partition(topic, i)).compose(r -> found.test(r) ? Future.succeededFuture(r)
                : elsewhere(topic, home, i + 1, r, call, found));
    }

    /** The partition that holds job {@code id} (see {@link #byId}); its id's when none does. */
    private Partition holder(String topic, String id) {
        Partition home = partitionOf(topic, id);
        if (partitions == 1) {
            return home;
        }
        int[] at = { home.index() };
        redis.await(byId(topic, id, p -> runAsync("get", p, Set.of(), List.of(id, "0"), 0, null).map(r -> {
            if (r.size() > 0) {
                at[0] = p.index();
            }
            return r;
        }), r -> r.size() > 0));
        return new Partition(topic, at[0]);
    }

    /** A job with its payload (JSON as enqueued, null when none or succeeded), for the dashboard. */
    public record JobDetail(JobInfo info, String payload) {
    }

    public Optional<JobDetail> lookup(String topic, String id) {
        return parseGet(topic, id, redis.await(byId(topic, id, p -> getCall(p, id), r -> r.size() > 0, Inspection::deadGet, Inspection::keptGet)));
    }

    private static Optional<JobDetail> parseGet(String topic, String id, Response r) {
        if (r.size() == 0) {
            return Optional.empty();
        }
        if ("r".equals(r.get(1).toString())) {
            return Optional.of(kept(topic, id, r.get(0).toString()));
        }
        if (JobState.ofLetter(r.get(1).toString()) == JobState.SUCCEEDED) {
            return Optional.of(new JobDetail(
                    JobInfo.succeeded(id, topic, Instant.ofEpochMilli((long) Double.parseDouble(r.get(2).toString()))), null));
        }
        JobRecord rec = JobRecord.decode(r.get(0).toString());
        JobState state = JobState.ofLetter(r.get(1).toString());
        Instant deadAt = state == JobState.DEAD ? Instant.ofEpochMilli((long) Double.parseDouble(r.get(2).toString())) : null;
        // A job its group holds back is scheduled, in no day shard: held says so (absent otherwise).
        Boolean held = r.size() > 3 && "1".equals(r.get(3).toString()) ? Boolean.TRUE : null;
        Boolean cancelling = JobState.cancellingLetter(r.get(1).toString()) ? Boolean.TRUE : null;
        return Optional.of(new JobDetail(info(topic, id, rec, state, deadAt, held, cancelling), rec.payloadOrNull()));
    }

    /**
     * A succeeded job its topic's result-retention keeps, from its results entry
     * ({@code <finishedAt ms>,<flag>\n<result JSON>\n<record>}, see lib.lua's keep_results): as it
     * was when it succeeded (runAt, attempts, ...), state succeeded, finishedAt and its result.
     */
    static JobDetail kept(String topic, String id, String entry) {
        int nl1 = entry.indexOf('\n');
        int nl2 = entry.indexOf('\n', nl1 + 1);
        int comma = entry.indexOf(',');
        return kept(topic, id, Long.parseLong(entry.substring(0, comma)), entry.charAt(comma + 1),
                entry.substring(nl1 + 1, nl2), JobRecord.decode(entry.substring(nl2 + 1)));
    }

    /**
     * As above, from the entry's parts: the time it succeeded, the result's flag and JSON (null: not
     * read, a listing without fields=full), the record.
     */
    static JobDetail kept(String topic, String id, long finishedMs, char flag, String json, JobRecord rec) {
        Instant finishedAt = Instant.ofEpochMilli(finishedMs);
        String result = flag == '=' || flag == '~' ? json : null;
        // attempts: those it took, the one that succeeded included (the record counts the failed ones).
        return new JobDetail(new JobInfo(id, topic, Instant.ofEpochMilli(rec.runAt()), JobState.SUCCEEDED, rec.attempts() + 1,
                rec.lostAttempts(), rec.maxAttempts() == 0 ? null : rec.maxAttempts(), rec.retry(), rec.group(), null,
                rec.lastError().isEmpty() ? null : rec.lastError(), null, finishedAt, null, rec.timeoutMs(),
                rec.expiresAt() == null ? null : Instant.ofEpochMilli(rec.expiresAt()), rec.priority(), result,
                flag == '!' ? Boolean.TRUE : null, flag == '~' ? Boolean.TRUE : null, false, false), rec.payloadOrNull());
    }

    /** The body of {@code GET /jobs/{topic}/{id}} of a job with a record (also each job of a listing, {@link JobListing}). */
    static JobInfo info(String topic, String id, JobRecord rec, JobState state, Instant deadAt, Boolean held,
            Boolean cancelling) {
        return new JobInfo(id, topic, Instant.ofEpochMilli(rec.runAt()), state, rec.attempts(), rec.lostAttempts(),
                rec.maxAttempts() == 0 ? null : rec.maxAttempts(), rec.retry(), rec.group(), held,
                rec.lastError().isEmpty() ? null : rec.lastError(), deadAt, null, cancelling, rec.timeoutMs(),
                rec.expiresAt() == null ? null : Instant.ofEpochMilli(rec.expiresAt()), rec.priority(), false, false);
    }

    public CancelOutcome cancel(String topic, String id) {
        return redis.await(cancelAsync(topic, id));
    }

    /** As {@link #cancel}, holding no thread. */
    public Future<CancelOutcome> cancelAsync(String topic, String id) {
        return cancelCodeAsync(topic, id).map(Inspection::cancelOutcome);
    }

    /**
     * As {@link #cancelAsync}, with cancel.lua's own reply: 1 deleted, 2 in flight and marked now, 3
     * marked before, 0 unknown, -1 in flight without a lease, -2 dead (what counts a cancel once).
     */
    public Future<Integer> cancelCodeAsync(String topic, String id) {
        boolean kept = layer.results().keeps(topic);
        return byId(topic, id, p -> runAsync("cancel", p, Set.of(), List.of(id, scriptChannel(p)), 0, null, false, kept),
                r -> r.toInteger() != 0, r -> r.toInteger() == -2, r -> false).map(Response::toInteger);
    }

    /** The outcome of a reply of cancel.lua (see {@link #cancelCodeAsync}). */
    public static CancelOutcome cancelOutcome(int code) {
        return switch (code) {
            case 1 -> CancelOutcome.CANCELLED;
            case 2, 3 -> CancelOutcome.CANCELLING;
            case -1 -> CancelOutcome.INFLIGHT;
            case -2 -> CancelOutcome.DEAD;
            default -> CancelOutcome.UNKNOWN;
        };
    }

    /**
     * Moves a scheduled job to run {@code ms} after Redis now ({@code delayed}) or at epoch ms
     * {@code ms}, across day shards in one script; a job that becomes its partition's earliest
     * wakes the takers. A job in flight or dead is not moved.
     */
    public RescheduleResult reschedule(String topic, String id, boolean delayed, long ms) {
        Partition p = holder(topic, id);
        // The new runAt's shard is known here; the old one's day is in the record, and the first
        // call names it (DQNEEDDAY) unless it is among these.
        Set<Integer> days = new TreeSet<>();
        aroundDay(days, delayed ? System.currentTimeMillis() + ms : ms);
        // With the result retention's keys: a job rescheduled past its expiresAt dies, and takes the
        // kept success of an earlier job of its id with it (lib.lua's forget_kept).
        Response r = redis.await(runAsync("reschedule", p, days, List.of(id, delayed ? "d" : "a", Long.toString(ms),
                scriptChannel(p), layer.burial(p)), 0, null, false, layer.results().keeps(topic)));
        return switch (r.get(0).toInteger()) {
            case 2 -> {
                // Its new runAt was after its expiresAt: it went to the dead set instead.
                layer.expired(p, 1);
                layer.calledBack(p);
                layer.trimmed(p, r, 2);
                JobRecord rec = JobRecord.decode(r.get(1).toString());
                yield new RescheduleResult(RescheduleResult.Outcome.RESCHEDULED, new JobInfo(id, topic,
                        Instant.ofEpochMilli(rec.runAt()), JobState.DEAD, rec.attempts(),
                        rec.maxAttempts() == 0 ? null : rec.maxAttempts(), rec.lastError(), null, null, false));
            }
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

    // ---------------------------------------------------------------- topics

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
                reads.add(Request.cmd(Command.MGET).arg(keys.next(p)).arg(keys.laneNext(p)));
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
                // "next" of priority 3 and "lnext" of the lanes
                for (Response n : replies.get(i + 3)) {
                    if (n != null) {
                        long v = n.toLong();
                        next = next < 0 ? v : Math.min(next, v);
                    }
                }
            }
            out.add(new TopicStats(topic, all - inflight - dead, inflight, dead, next));
        }
        return out;
    }

    /**
     * Gauge values of a topic summed over its partitions: {scheduled, inflight, dead, age in ms of
     * the oldest overdue scheduled job (0 when none is overdue), due now (runAt passed, not taken),
     * 1 if paused (any partition) else 0, held back by their groups (part of scheduled)}. One script
     * call per partition.
     */
    public long[] gauges(String topic) {
        long jobs = 0, inflight = 0, dead = 0, oldest = -1, now = 0, due = 0, paused = 0, held = 0;
        for (Partition p : partitionsOf(topic)) {
            Response r = run("stats", p, aroundNow(), List.of());
            jobs += r.get(0).toLong();
            inflight += r.get(1).toLong();
            dead += r.get(2).toLong();
            long o = r.get(3).toLong();
            now = r.get(4).toLong();
            due += r.get(5).toLong();
            paused = Math.max(paused, r.get(6).toLong());
            held += r.size() > 7 ? r.get(7).toLong() : 0;
            if (o >= 0) {
                oldest = oldest < 0 ? o : Math.min(oldest, o);
            }
        }
        return new long[] { jobs - inflight - dead, inflight, dead, oldest < 0 ? 0 : now - oldest, due, paused, held };
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

    /**
     * A topic for the dashboard: one atomic {@code peek} per partition, bounded however many
     * jobs it holds (a timeline of {@code buckets} × {@code bucketMs} from now, the next
     * {@code nextLimit} jobs, {@code inflightLimit} jobs in flight), merged.
     */
    public TopicSnapshot peek(String topic, long bucketMs, int buckets, int nextLimit, int inflightLimit) {
        long now = 0, due = 0, oldest = -1, jobs = 0, inflightCount = 0, dead = 0, heldCount = 0;
        long[] timeline = new long[buckets];
        List<TopicSnapshot.Scheduled> next = new ArrayList<>();
        List<TopicSnapshot.Held> held = new ArrayList<>();
        List<TopicSnapshot.Running> inflight = new ArrayList<>();
        for (Partition p : partitionsOf(topic)) {
            Response r = run("peek", p, aroundNow(), List.of(Long.toString(bucketMs), Integer.toString(buckets),
                    Integer.toString(nextLimit), Integer.toString(inflightLimit)));
            now = Math.max(now, r.get(0).toLong());
            due += r.get(1).toLong();
            jobs += r.get(6).toLong();
            inflightCount += r.get(7).toLong();
            dead += r.get(8).toLong();
            heldCount += r.get(9).toLong();
            Response h = r.get(10);
            for (int i = 0; i + 3 < h.size(); i += 4) {
                held.add(new TopicSnapshot.Held(h.get(i).toString(), h.get(i + 1).toLong(), h.get(i + 2).toString(),
                        record(h.get(i + 3))));
            }
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
                        colon > 0 ? token.substring(0, colon) : token, record(running.get(i + 3)),
                        token.endsWith(JobQueue.CANCEL_MARK)));
            }
        }
        next.sort(java.util.Comparator.comparingLong(TopicSnapshot.Scheduled::runAtMs));
        inflight.sort(java.util.Comparator.comparingLong(TopicSnapshot.Running::leaseDeadlineMs));
        return new TopicSnapshot(now, jobs - inflightCount - dead, due, oldest, inflightCount, dead, timeline,
                next.size() > nextLimit ? next.subList(0, nextLimit) : next,
                inflight.size() > inflightLimit ? inflight.subList(0, inflightLimit) : inflight, heldCount,
                held.size() > nextLimit ? held.subList(0, nextLimit) : held);
    }

    // ---------------------------------------------------------------- dead set

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

    /**
     * Dead job back to scheduled, due now, attempts reset; empty when the id is not dead, or when
     * its id is now a job of a group in another partition (claimed in its home, see
     * {@link IdClaims}: the dead one goes once that job is written; a stale claim is dropped first).
     */
    public Optional<Instant> revive(String topic, String id) {
        for (int round = 0; round < IdClaims.ROUNDS; round++) {
            // Again each round: a claim found stale with its job dead in its partition took the dead copy here.
            Partition p = holder(topic, id);
            Response r = redis.await(runAsync("revive", p, aroundNow(), List.of(id, scriptChannel(p)), 0, null, partitions > 1));
            if (!IdClaims.claimed(r)) {
                return r.size() == 0 ? Optional.empty() : Optional.of(Instant.ofEpochMilli(r.get(0).toLong()));
            }
            if (redis.await(claims.claimStands(p, id, r))) {
                return Optional.empty();
            }
        }
        return Optional.empty();
    }

    public boolean purge(String topic, String id) {
        return run("purge", holder(topic, id), Set.of(), List.of(id)).toInteger() == 1;
    }
}
