package io.delayq.store;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.delayq.core.IdTakenException;
import io.delayq.core.NewJob;
import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * One job per id over a topic's partitions. A job of a group lives in its group's partition, not
 * its id's ({@link #partitionOf(String, String, String)}), so one partition's enqueue script alone
 * would not see an id enqueued again with another group, or none. The id's home partition
 * ({@link #partitionOf(String, String)}) is where every enqueue of it meets: an enqueue into another
 * partition first claims the id there (claim.lua: refused when the id is a job of the home, or
 * claimed by a third partition whose claim stands), and the home's enqueue scripts write nothing
 * for a claimed id. A claim names the partition its job went to; it stands while that job lives
 * there (scheduled or in flight: get.lua) and while its enqueue may still be on its way (for
 * {@link #PENDING_MS} after the claim was written, until that enqueue marks it done). Otherwise it
 * is stale: dropped, or taken over, with a compare-and-set (claimset.lua), so that of two enqueues
 * that race for an id exactly one goes on. Every script runs on one partition: no cross-slot call,
 * a Redis Cluster works as a single Redis does.
 *
 * <p>With one partition (the default) none of this runs: a group and an id pick the same
 * partition. With several, an enqueue into the id's home (no group, or a group of the same
 * partition) pays one HGET inside its script; a job of a group elsewhere pays two calls more (the
 * claim before, the mark done after). Stale claims are dropped by the next enqueue of their id
 * and by the dead sweep ({@link DeadSweep}), so the claims stay about as many as the live jobs of
 * groups.
 */
final class IdClaims extends StorePart {
    /** How long a claim whose job is not (yet) in its partition still stands: its enqueue may be on its way. */
    static final long PENDING_MS = 30_000;
    /** Rounds of "stale claim dropped, try again" before an enqueue that keeps meeting new claims gives up (409). */
    static final int ROUNDS = 4;

    IdClaims(StoreLayer layer) {
        super(layer);
    }

    /**
     * A claim as stored: {@code <partition>:<ms>:<group>}, ms the Redis time it was written (or
     * one more than the claim it replaced), negated once its enqueue is done: every claim of an id
     * has its own value, so a compare-and-set never takes a later claim for the one it read.
     */
    record Claim(int partition, long ms, String group, String value) {
        static Claim parse(String value) {
            int a = value.indexOf(':');
            int b = value.indexOf(':', a + 1);
            return new Claim(Integer.parseInt(value.substring(0, a)), Long.parseLong(value.substring(a + 1, b)),
                    value.substring(b + 1), value);
        }

        /** Whether its enqueue may still be on its way at Redis time {@code now}. */
        boolean pending(long now) {
            return ms > 0 && now - ms < PENDING_MS;
        }

        String done() {
            return partition + ":" + -Math.abs(ms) + ":" + group;
        }
    }

    /** A claim this call wrote, in its id's home partition. */
    record Written(Partition home, String id, String value) {
    }

    /**
     * What a claim step did: the claims it wrote, and the first refusal ({@link IdTakenException})
     * or failure (Redis), null when none.
     */
    record Claimed(List<Written> written, Throwable refused) {
        static Claimed of(Written w) {
            return new Claimed(List.of(w), null);
        }

        static Claimed refusing(IdTakenException e) {
            return new Claimed(List.of(), e);
        }
    }

    /**
     * Claims, in their homes, the ids of those {@code jobs} that go to {@code p} though their id's
     * home is another partition: one claim.lua per home. Fails with {@link IdTakenException} when
     * one of them is a job elsewhere (the claims this call wrote are then marked done: they stand
     * only while a job backs them). Its future gives the claims written, for {@link #done}.
     */
    Future<List<Written>> claim(Partition p, List<NewJob> jobs) {
        Map<Partition, List<NewJob>> byHome = new LinkedHashMap<>();
        for (NewJob job : jobs) {
            Partition home = partitionOf(p.topic(), job.id());
            if (home.index() != p.index()) {
                byHome.computeIfAbsent(home, h -> new ArrayList<>()).add(job);
            }
        }
        if (byHome.isEmpty()) {
            return Future.succeededFuture(List.of());
        }
        List<Future<Claimed>> calls = new ArrayList<>();
        byHome.forEach((home, some) -> calls.add(claimIn(home, p, some, 0)));
        return together(calls).compose(c -> c.refused() == null ? Future.succeededFuture(c.written())
                : done(c.written()).transform(ignored -> Future.<List<Written>> failedFuture(c.refused())));
    }

    /** What several claim steps did together: every claim they wrote, and the first refusal or failure. */
    private static Future<Claimed> together(List<Future<Claimed>> steps) {
        return Future.join(steps).transform(all -> {
            List<Written> written = new ArrayList<>();
            Throwable refused = null;
            for (Future<Claimed> step : steps) {
                if (step.succeeded()) {
                    written.addAll(step.result().written());
                    refused = refused != null ? refused : step.result().refused();
                }
            }
            return Future.succeededFuture(new Claimed(written, refused != null ? refused : all.cause()));
        });
    }

    private Future<Claimed> claimIn(Partition home, Partition p, List<NewJob> jobs, int round) {
        List<String> args = new ArrayList<>(2 + jobs.size() * 2);
        args.add(Integer.toString(p.index()));
        args.add(Integer.toString(jobs.size()));
        for (NewJob job : jobs) {
            args.add(job.id());
            args.add(job.group() == null ? "" : job.group());
        }
        return runAsync("claim", home, Set.of(), args, 0, null, true).compose(r -> {
            long now = r.get(0).toLong();
            List<Future<Claimed>> each = new ArrayList<>(jobs.size());
            for (int i = 0; i < jobs.size(); i++) {
                NewJob job = jobs.get(i);
                String value = r.get(2 + 2 * i).toString();
                each.add(switch (r.get(1 + 2 * i).toInteger()) {
                    case 0 -> Future.succeededFuture(Claimed.of(new Written(home, job.id(), value)));
                    case 1 -> Future.succeededFuture(Claimed.refusing(new IdTakenException(job.id(), value)));
                    default -> takeOver(home, p, job, Claim.parse(value), now, round);
                });
            }
            return together(each);
        });
    }

    /** Another partition's claim on an id that goes to {@code p}: refused while it stands, else taken over. */
    private Future<Claimed> takeOver(Partition home, Partition p, NewJob job, Claim found, long now, int round) {
        return found(found, p.topic(), job.id(), now).compose(there -> {
            if (there.stands()) {
                IdTakenException refused = new IdTakenException(job.id(), found.group(), found.pending(now));
                return heal(home, job.id(), found, there).transform(v -> Future.succeededFuture(Claimed.refusing(refused)));
            }
            String mine = p.index() + ":" + Math.max(now, Math.abs(found.ms()) + 1) + ":" + (job.group() == null ? "" : job.group());
            return set(home, List.of(job.id(), found.value(), mine), there == There.DEAD ? List.of(job.id()) : List.of())
                    .compose(changed -> changed.get(0)
                    ? Future.succeededFuture(Claimed.of(new Written(home, job.id(), mine)))
                    : round + 1 < ROUNDS ? claimIn(home, p, List.of(job), round + 1)
                            : Future.succeededFuture(Claimed.refusing(new IdTakenException(job.id(), found.group()))));
        });
    }

    /** Marks the claims done, no job of theirs written ({@link #done(List, Set)} with none live). */
    Future<Void> done(List<Written> written) {
        return done(written, Set.of());
    }

    /**
     * Marks the claims done: they stand only while their job lives in its partition. The ids in
     * {@code live} are those whose job now lives there (scheduled or in flight, the enqueue's
     * answer): a dead job of theirs in the home goes in the same step (claimset.lua), not before,
     * so that an enqueue refused, failed or lost on its way never takes it with it. A failed call is
     * sent once more, then ignored: a pending claim lapses, and the sweep or the next look at the
     * claim ({@link #heal}) does what the lost step would have done.
     */
    Future<Void> done(List<Written> written, Set<String> live) {
        if (written.isEmpty()) {
            return Future.succeededFuture();
        }
        Map<Partition, List<String>> byHome = new LinkedHashMap<>();
        Map<Partition, List<String>> replacing = new LinkedHashMap<>();
        for (Written w : written) {
            List<String> triples = byHome.computeIfAbsent(w.home(), h -> new ArrayList<>());
            triples.add(w.id());
            triples.add(w.value());
            triples.add(Claim.parse(w.value()).done());
            if (live.contains(w.id())) {
                replacing.computeIfAbsent(w.home(), h -> new ArrayList<>()).add(w.id());
            }
        }
        List<Future<List<Boolean>>> calls = new ArrayList<>();
        byHome.forEach((home, triples) -> {
            List<String> replaced = replacing.getOrDefault(home, List.of());
            calls.add(set(home, triples, replaced).recover(e -> set(home, triples, replaced)));
        });
        return Future.join(calls).<Void> mapEmpty().otherwiseEmpty();
    }

    /**
     * What an enqueue script of {@code p} answered for claimed ids ({@code {'claimed', now, index,
     * claim, ...}}): each claim that stands refuses the call ({@link IdTakenException}); the stale
     * ones are dropped (compare-and-delete), and the caller sends its call again.
     */
    Future<Void> dropStale(Partition p, List<NewJob> jobs, Response reply) {
        List<NewJob> claimed = new ArrayList<>();
        List<String> values = new ArrayList<>();
        for (int i = 2; i + 1 < reply.size(); i += 2) {
            claimed.add(jobs.get(reply.get(i).toInteger() - 1));
            values.add(reply.get(i + 1).toString());
        }
        return dropStale(p, claimed, values, reply.get(1).toLong());
    }

    /** As above, for {@code values.get(i)}, the claim found for {@code claimed.get(i)}'s id in {@code p}. */
    private Future<Void> dropStale(Partition p, List<NewJob> claimed, List<String> values, long now) {
        List<Future<Void>> each = new ArrayList<>();
        Healing healing = new Healing();
        for (int i = 0; i < claimed.size(); i++) {
            NewJob job = claimed.get(i);
            Claim c = Claim.parse(values.get(i));
            each.add(found(c, p.topic(), job.id(), now).compose(there -> {
                synchronized (healing) {
                    healing.add(job.id(), c, there);
                }
                return there.stands() ? Future.failedFuture(new IdTakenException(job.id(), c.group(), c.pending(now)))
                        : Future.succeededFuture();
            }));
        }
        // The claims that stand are healed too, before the refusal goes out.
        return Future.join(each).transform(all -> healing.send(p).compose(v -> all.succeeded() ? Future.<Void> succeededFuture()
                : Future.<Void> failedFuture(all.cause())));
    }

    /**
     * Before a batch over several partitions writes any: the claims on those of {@code jobs} that
     * go to their id's home {@code p} (one HMGET), refused while they stand and dropped when stale,
     * so that a refusal comes before any partition of the batch was written. (The enqueue script
     * still checks: a claim made between this read and the write refuses its own partition only.)
     */
    Future<Void> checkHome(Partition p, List<NewJob> jobs) {
        List<NewJob> home = new ArrayList<>();
        for (NewJob job : jobs) {
            if (partitionOf(p.topic(), job.id()).index() == p.index()) {
                home.add(job);
            }
        }
        if (home.isEmpty()) {
            return Future.succeededFuture();
        }
        return ensureLayoutAsync().compose(v -> {
            Request hmget = Request.cmd(Command.HMGET).arg(keys.claims(p));
            home.forEach(job -> hmget.arg(job.id()));
            return redis.sendAsync(hmget);
        }).compose(r -> {
            List<NewJob> claimed = new ArrayList<>();
            List<String> values = new ArrayList<>();
            for (int i = 0; i < home.size(); i++) {
                if (r.get(i) != null) {
                    claimed.add(home.get(i));
                    values.add(r.get(i).toString());
                }
            }
            return claimed.isEmpty() ? Future.succeededFuture()
                    : redis.sendAsync(Request.cmd(Command.TIME)).compose(t -> dropStale(p, claimed, values, timeMs(t)));
        });
    }

    /**
     * Whether the claim of {@code id} in {@code topic} stands at Redis time {@code now}: its enqueue
     * may be on its way, or its job lives in the partition it names, scheduled or in flight
     * (cancelling too: its id is not free yet); dead or gone, it is stale.
     */
    Future<Boolean> stands(Claim c, String topic, String id, long now) {
        return found(c, topic, id, now).map(There::stands);
    }

    /**
     * What backs a claim: its enqueue may be on its way ({@link #PENDING_MS}), else its job in the
     * partition it names lives (scheduled or in flight, cancelling too), is dead, or is gone.
     */
    enum There {
        PENDING, LIVE, DEAD, GONE;

        boolean stands() {
            return this == PENDING || this == LIVE;
        }
    }

    /** What backs the claim of {@code id} in {@code topic} at Redis time {@code now} (get.lua on its partition). */
    Future<There> found(Claim c, String topic, String id, long now) {
        if (c.pending(now)) {
            return Future.succeededFuture(There.PENDING);
        }
        return runAsync("get", new Partition(topic, c.partition()), Set.of(), List.of(id, "0"), 0, null)
                .map(r -> r.size() == 0 ? There.GONE : "d".equals(r.get(1).toString()) ? There.DEAD : There.LIVE);
    }

    /**
     * The compare-and-sets that a look at claims of one home calls for: a stale claim dropped; and
     * whenever the claim's job is found in its partition, live or dead, a dead job of the id in the
     * home goes with it (claimset.lua's replaced ids), the claim of a live one marked done. That is
     * the done step of an enqueue that ran ({@link #done(List, Set)}) done again: a lost reply, a
     * crash after the enqueue or a batch that failed elsewhere left the dead home copy next to the
     * job, and a requeue of both would have made two live jobs of the id. A pending claim is left
     * alone (its enqueue may be on its way, its done step will do it).
     */
    private final class Healing {
        final List<String> triples = new ArrayList<>();
        final List<String> replaced = new ArrayList<>();

        void add(String id, Claim c, There there) {
            if (there == There.PENDING) {
                return;
            }
            triples.add(id);
            triples.add(c.value());
            triples.add(there == There.LIVE ? c.done() : "");
            if (there != There.GONE) {
                replaced.add(id);
            }
        }

        Future<List<Boolean>> send(Partition home) {
            return set(home, triples, replaced);
        }
    }

    /** The healing of one claim ({@link Healing}); failures ignored: the sweep does it again. */
    private Future<Void> heal(Partition home, String id, Claim c, There there) {
        Healing healing = new Healing();
        healing.add(id, c, there);
        return healing.send(home).<Void> mapEmpty().otherwiseEmpty();
    }

    /** claimset.lua on a home partition: {@code triples} are (id, expected, new; '' deletes). */
    Future<List<Boolean>> set(Partition home, List<String> triples) {
        return set(home, triples, List.of());
    }

    /** As above; a dead job here of an id in {@code replaced} goes with its claim's change (see claimset.lua). */
    private Future<List<Boolean>> set(Partition home, List<String> triples, List<String> replaced) {
        if (triples.isEmpty()) {
            return Future.succeededFuture(List.of());
        }
        List<String> args = new ArrayList<>(2 + triples.size() + replaced.size());
        args.add(Integer.toString(triples.size() / 3));
        args.addAll(triples);
        if (!replaced.isEmpty()) {
            args.add(Integer.toString(replaced.size()));
            args.addAll(replaced);
        }
        return runAsync("claimset", home, Set.of(), args, 0, null, true).map(r -> {
            List<Boolean> out = new ArrayList<>(r.size());
            for (Response changed : r) {
                out.add(changed.toInteger() == 1);
            }
            return out;
        });
    }

    /** Claims one sweep call reads of a partition (HSCAN COUNT), and the calls per partition and sweep at most. */
    static final int SWEEP_COUNT = 200;
    private static final int SWEEP_CALLS = 25;

    /**
     * Drops the topic's stale claims, those whose job left its partition (acked, cancelled, dead,
     * purged) with no enqueue of its id since: an HSCAN of each partition's claims, a check of
     * each claim's partition, one compare-and-delete per partition and call. With one partition,
     * nothing (there are no claims). Returns how many it dropped.
     */
    long sweep(String topic) {
        if (partitions == 1) {
            return 0;
        }
        ensureLayout();
        long dropped = 0;
        for (Partition home : partitionsOf(topic)) {
            String cursor = "0";
            for (int call = 0; call < SWEEP_CALLS; call++) {
                Response r = redis.send(Request.cmd(Command.HSCAN).arg(keys.claims(home)).arg(cursor).arg("COUNT")
                        .arg(SWEEP_COUNT));
                cursor = r.get(0).toString();
                Map<String, String> found = pairs(r.get(1));
                if (!found.isEmpty()) {
                    long now = redisTimeMs();
                    Healing healing = new Healing();
                    for (Map.Entry<String, String> e : found.entrySet()) {
                        Claim c = Claim.parse(e.getValue());
                        healing.add(e.getKey(), c, redis.await(found(c, topic, e.getKey(), now)));
                    }
                    List<Boolean> changed = redis.await(healing.send(home));
                    for (int i = 0; i < changed.size(); i++) {
                        dropped += changed.get(i) && healing.triples.get(3 * i + 2).isEmpty() ? 1 : 0;
                    }
                }
                if ("0".equals(cursor)) {
                    break;
                }
            }
        }
        return dropped;
    }

    /** Whether an enqueue script's reply is the claimed ids' (see enqueue.lua). */
    static boolean claimed(Response reply) {
        return reply.size() > 0 && "claimed".equals(reply.get(0).toString());
    }

    /**
     * The ids of {@code jobs} that an enqueue script's {@code reply} answers as living in the
     * partition (scheduled or in flight): those whose claim, marked done, takes a dead job of the
     * id in its home with it ({@link #done(List, Set)}). None for a tick fired before ({@code {now, -1}}).
     */
    static Set<String> live(List<NewJob> jobs, Response reply) {
        if (reply.size() < 1 + 4 * jobs.size()) {
            return Set.of();
        }
        Set<String> out = new java.util.HashSet<>();
        for (int i = 0; i < jobs.size(); i++) {
            // An id twice in a batch: its last entry is what the enqueue left.
            String state = reply.get(4 + 4 * i).toString();
            if ("s".equals(state) || "i".equals(state) || "x".equals(state)) {
                out.add(jobs.get(i).id());
            } else {
                out.remove(jobs.get(i).id());
            }
        }
        return out;
    }

    /**
     * revive.lua's {@code {'claimed', now, claim}} for {@code id}, dead in {@code p}, its home: true
     * when the claim stands (the id's job is the one it names: this dead one is not revived); false
     * once a stale one was dropped (compare-and-delete), so that the caller may try again. Either
     * way a job of the claim found in its partition, live or dead, takes this dead one with it
     * ({@link Healing}): the caller's next try then finds the id dead there, not here.
     */
    Future<Boolean> claimStands(Partition p, String id, Response reply) {
        Claim c = Claim.parse(reply.get(2).toString());
        return found(c, p.topic(), id, reply.get(1).toLong()).compose(there -> {
            Healing healing = new Healing();
            healing.add(id, c, there);
            return healing.send(p).map(there.stands());
        });
    }
}
