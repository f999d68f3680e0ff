package io.delayq.store;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import jakarta.inject.Singleton;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * The base of every part of the store: the layer's gateway, scripts and keys, the partitions of
 * a topic, and how a script runs on one partition with the day shards it needs. Each part is one
 * purpose: {@link JobQueue} the job path, {@link Inspection} reads and job-level operator actions,
 * {@link TopicAdmin} a topic's flow and lifecycle, {@link ScheduleStore} recurring schedules,
 * {@link ReplicaStore} the replicas' entries, {@link DeadCallbackStore} dead-job callbacks. Only
 * this package knows key names (see {@link Keys}) and the scripts' argument order.
 *
 * <p>The parts are {@code @Singleton} beans: not proxied, so they need no constructor without
 * arguments (their fields are final); the {@link StoreLayer} they share is created with the first.
 */
public abstract class StorePart {
    static final long DAY_MS = 86_400_000L;
    protected final StoreLayer layer;
    protected final RedisGateway redis;
    protected final Scripts scripts;
    protected final Keys keys;
    protected final int partitions;
    protected final boolean cluster;
    protected final int durableReplicas;
    private final long durableWaitMs;
    /** Dedup window ms of the topics that set one ({@code delayq.topics.<t>.dedup-window}). */
    protected final Map<String, Long> dedupWindows;
    /** Rate limit in jobs/s of the topics that configure one ({@code delayq.topics.<t>.rate-limit}). */
    protected final Map<String, Double> rateLimits;
    /** Concurrency cap of the topics that configure one ({@code delayq.topics.<t>.max-in-flight}). */
    protected final Map<String, Integer> maxInFlights;
    protected final Map<String, Integer> groupMaxInFlights;
    /** Rate limit per group in jobs/s of the topics that configure one ({@code delayq.topics.<t>.group-rate-limit}). */
    protected final Map<String, Double> groupRateLimits;
    /**
     * This host's clock, epoch ms, by which a take reckons the days around now and the lane shards
     * of today a grouped topic's steps get: the wall clock (a test moves it across days).
     */
    volatile LongSupplier hostClock = System::currentTimeMillis;

    protected StorePart(StoreLayer layer) {
        this.layer = layer;
        this.redis = layer.redis();
        this.scripts = layer.scripts();
        this.keys = layer.keys();
        this.partitions = layer.partitions();
        this.cluster = layer.cluster();
        this.durableReplicas = layer.durableReplicas();
        this.durableWaitMs = layer.durableWaitMs();
        this.dedupWindows = layer.dedupWindows();
        this.rateLimits = layer.rateLimits();
        this.maxInFlights = layer.maxInFlights();
        this.groupMaxInFlights = layer.groupMaxInFlights();
        this.groupRateLimits = layer.groupRateLimits();
    }

    /**
     * Waits for one of this store's futures ({@code *Async}): what each blocking method does. Not
     * on an event loop (it throws there).
     */
    public <T> T await(Future<T> future) {
        return redis.await(future);
    }

    /** The topic's dedup window in ms as the scripts take it: 0 = none. */
    protected String dedupWindow(String topic) {
        return Long.toString(dedupWindows.getOrDefault(topic, 0L));
    }

    /** The partition that owns a job id: stable across processes (String.hashCode is specified). */
    public Partition partitionOf(String topic, String id) {
        return new Partition(topic, Math.floorMod(id.hashCode(), partitions));
    }

    /**
     * The partition a new job goes to: its group's when it has one (all of a group's jobs in one
     * partition, one slot on a cluster, so that one script sees the whole group), else its id's.
     */
    public Partition partitionOf(String topic, String id, String group) {
        return partitionOf(topic, group == null ? id : group);
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
    protected String scriptChannel(Partition p) {
        return cluster ? "!" + wakeChannel(p) : wakeChannel(p);
    }

    /** See {@link StoreLayer#ensureLayout}: every call that builds keys first learns the store's layout. */
    protected void ensureLayout() {
        layer.ensureLayout();
    }

    protected Future<Void> ensureLayoutAsync() {
        return layer.ensureLayoutAsync();
    }

    /** See {@link StoreLayer#checkPartitions}. */
    public int checkPartitions(int partitions) {
        return layer.checkPartitions(partitions);
    }

    /** Redis' clock, epoch ms (TIME). */
    public long redisTimeMs() {
        return timeMs(redis.send(Request.cmd(Command.TIME)));
    }

    static long timeMs(Response t) {
        return t.get(0).toLong() * 1000 + t.get(1).toLong() / 1000;
    }

    /** A HGETALL reply as a map: RESP3 sends a map, RESP2 [field, value, field, value...]. */
    static Map<String, String> pairs(Response all) {
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

    static JobRecord record(Response r) {
        String s = r == null ? "" : r.toString();
        return s.isEmpty() ? null : JobRecord.decode(s);
    }

    public static List<String> ids(Response r) {
        List<String> out = new ArrayList<>(r.size());
        for (Response id : r) {
            out.add(id.toString());
        }
        return out;
    }

    static void addLeases(List<String> args, List<Lease> leases) {
        args.add(Integer.toString(leases.size()));
        for (Lease l : leases) {
            args.add(l.id());
            args.add(l.token());
        }
    }

    /**
     * Reads of keys in several partitions: one pipelined batch on a single Redis; on a cluster,
     * where a batch must stay on one node, every read sent at once on its own.
     */
    protected List<Response> readAll(List<Request> reads) {
        return cluster ? redis.sendEach(reads) : redis.batch(reads);
    }

    /**
     * Runs a script on a partition with the shards of {@code days}; when the script names days
     * it needs and was not given (DQNEEDDAY), adds them and runs it again.
     */
    protected Response run(String script, Partition p, Set<Integer> days, List<String> args) {
        return run(script, p, days, args, 0, null);
    }

    /**
     * As above; with {@code replicas} &gt; 0 the reply waits until the writes reached that many
     * replicas; {@code late} (if not null) gets a reply that arrives after the call timed out.
     */
    protected Response run(String script, Partition p, Set<Integer> days, List<String> args, int replicas,
            Consumer<Response> late) {
        return redis.await(runAsync(script, p, days, args, replicas, late));
    }

    /** As {@link #run(String, Partition, Set, List, int, Consumer)}, holding no thread. */
    protected Future<Response> runAsync(String script, Partition p, Set<Integer> days, List<String> args, int replicas,
            Consumer<Response> late) {
        return runAsync(script, p, days, args, replicas, late, false);
    }

    /**
     * As above; with {@code claims} the partition's {@link Keys#claims} key goes after the day
     * shards (KEYS[29 + k]: the scripts that read it, only with several partitions, see
     * {@link IdClaims}).
     */
    protected Future<Response> runAsync(String script, Partition p, Set<Integer> days, List<String> args, int replicas,
            Consumer<Response> late, boolean claims) {
        return runAsync(script, p, days, args, replicas, late, claims, false);
    }

    /**
     * As above; with {@code results} the partition's {@link Keys#succeeded} and {@link Keys#results}
     * keys go after the day shards instead (KEYS[29 + k], KEYS[30 + k]: the scripts that ack or read
     * succeeded jobs, see lib.lua's keep_results; they never take claims).
     */
    protected Future<Response> runAsync(String script, Partition p, Set<Integer> days, List<String> args, int replicas,
            Consumer<Response> late, boolean claims, boolean results) {
        if (claims && results) {
            // Both would be KEYS[29 + k] (lib.lua's K_CLAIMS and K_SUCCEEDED): no script takes both.
            throw new IllegalArgumentException(script + ": the claims key and the result keys are never passed together");
        }
        Set<Integer> learnt = days instanceof TreeSet<Integer> mutable ? mutable : new TreeSet<>(days);
        Set<Integer> shardDays = withTodaysLanes(p, learnt);
        return ensureLayoutAsync().recover(StoreUnavailableException::notSent)
                .compose(v -> runWithDays(script, p, shardDays, learnt, args, replicas, late, claims, results, 0));
    }

    /**
     * A step of a topic with group-max-in-flight may free a group's slot and release its next held
     * job, of any lane, into today's shard of that lane, due now (lib.lua's group_fill); without
     * that shard at hand the job would go into today's plain shard and be served as priority 3. So
     * a call given today's plain shard of such a topic gets today's shard of every lane too: four
     * keys more, no command more; a topic without groups pays nothing. A take under a group rate
     * limit may put a job of any lane off to tomorrow (take.lua names today's and tomorrow's shard of
     * every lane): such a topic gets tomorrow's too, so that no taker learns them by a DQNEEDDAY.
     * They go into a copy: {@code days} is what a caller learns and keeps (a taker's older days), and
     * these codes, added afresh on every call, would pile up there by four or eight a day.
     *
     * @return {@code days} itself, or a copy with those codes
     */
    private Set<Integer> withTodaysLanes(Partition p, Set<Integer> days) {
        boolean grouped = groupMaxInFlights.getOrDefault(p.topic(), 0) > 0;
        boolean paced = groupRateLimits.getOrDefault(p.topic(), 0.0) > 0;
        if (!grouped && !paced) {
            return days;
        }
        long now = hostClock.getAsLong();
        int today = Keys.dayOf(now);
        if (!days.contains(today)) {
            return days;
        }
        Set<Integer> shardDays = new TreeSet<>(days);
        for (int lane : new int[] { 1, 2, 4, 5 }) {
            shardDays.add(Keys.laneCode(lane, today));
            if (paced) {
                shardDays.add(Keys.laneCode(lane, Keys.dayOf(now + DAY_MS)));
            }
        }
        return shardDays;
    }

    /**
     * Runs the script with the shards of {@code shardDays}; the days a DQNEEDDAY names are added to
     * it and to {@code learnt} (the caller's set, when it is another), and the script run again.
     */
    private Future<Response> runWithDays(String script, Partition p, Set<Integer> shardDays, Set<Integer> learnt,
            List<String> args, int replicas, Consumer<Response> late, boolean claims, boolean results, int attempt) {
        List<String> k = new ArrayList<>(30 + shardDays.size());
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
        k.add(keys.callbackNext(p));
        k.add(keys.held(p));
        k.add(keys.maxInFlight(p));
        k.add(keys.capped(p));
        k.add(keys.groups(p));
        k.add(keys.groupsHeld(p));
        k.add(keys.groupsAdmitted(p));
        k.add(keys.relayed(p));
        k.add(keys.groupRateLimit(p));
        k.add(keys.groupRateTat(p));
        k.add(keys.laneDays(p));
        k.add(keys.laneNext(p));
        List<String> a = new ArrayList<>(1 + shardDays.size() + args.size());
        a.add(Integer.toString(shardDays.size()));
        for (int day : shardDays) {
            k.add(keys.due(p, day));
            a.add(Integer.toString(day));
        }
        if (claims) {
            k.add(keys.claims(p));
        } else if (results) {
            k.add(keys.succeeded(p));
            k.add(keys.results(p));
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
                int code = Integer.parseInt(d.trim());
                shardDays.add(code);
                learnt.add(code);
            }
            return runWithDays(script, p, shardDays, learnt, args, replicas, late, claims, results, attempt + 1);
        });
    }

    /** Yesterday, today and tomorrow by this host's clock: covers Redis' "now" despite skew. */
    static Set<Integer> aroundNow() {
        Set<Integer> days = new TreeSet<>();
        aroundDay(days, System.currentTimeMillis());
        return days;
    }

    /**
     * {@link #aroundNow()} and the same days of every priority lane ({@link Keys#laneCode}): for a
     * call that may put jobs of any lane back, due now, in one step (a dead sweep's requeue).
     */
    static Set<Integer> aroundNowAllLanes() {
        Set<Integer> days = aroundNow();
        for (int day : List.copyOf(days)) {
            for (int lane : new int[] { 1, 2, 4, 5 }) {
                days.add(Keys.laneCode(lane, day));
            }
        }
        return days;
    }

    static void aroundDay(Set<Integer> days, long ms) {
        days.add(Keys.dayOf(ms - DAY_MS));
        days.add(Keys.dayOf(ms));
        days.add(Keys.dayOf(ms + DAY_MS));
    }

    static String oneLine(String s) {
        // RS, US, GS and FS mark the trace context, the lost attempts, the job's own retry backoff
        // and its group in the record's error field.
        String line = s == null ? ""
                : s.replace('\n', ' ').replace('\r', ' ').replace('\u001e', ' ').replace('\u001f', ' ')
                        .replace('\u001d', ' ').replace('\u001c', ' ');
        return line.length() > 500 ? line.substring(0, 500) + "..." : line;
    }
}
