package io.delayq.ops;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.dispatch.Dispatcher;
import io.delayq.dispatch.TopicRegistry;
import io.delayq.store.RedisClock;
import io.delayq.store.ReplicaStore;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.scheduler.Scheduled;

/**
 * Every replica announces itself in Redis every {@value #EVERY_S} s: the topics it serves and
 * its rates over the last minute (enqueued, succeeded, failed per second, lateness p99), from its
 * own counters. The dashboard of any replica sums them: cluster-wide figures at one {@code HSET}
 * per replica per {@value #EVERY_S} s, nothing on the path of a job; an entry whose counters did
 * not move since it was last written (an idle replica, also while its last minute's rates fall to
 * zero) is rewritten only every {@value #UNCHANGED_S} s. An entry not refreshed for
 * {@value #GONE_S} s is a replica gone, dropped by the next reader.
 * <p>
 * Times are Redis time, so that a pod whose clock is off is neither dropped as gone nor kept
 * alive when it is: the entry's {@code seenMs} is the {@link RedisClock}'s (Redis time counted on
 * the host's monotonic clock), which a {@code TIME} before the write refreshes when the clock
 * has no sample younger than {@value #CLOCK_FRESH_S} s (a replica that takes nothing, a replica
 * that serves no topic: it would otherwise have no Redis time to check an enqueue's horizon
 * against). The topics' "last served" ({@code dq:topics:active}, what
 * {@code delayq.topics-retention} counts from, in days) is written with the entry when the served
 * topics change, and every {@value #ACTIVE_S} s otherwise: an idle replica costs Redis one
 * {@code HSET} per {@value #UNCHANGED_S} s here.
 */
@ApplicationScoped
public class ReplicaRegistry {
    private static final Logger LOG = Logger.getLogger(ReplicaRegistry.class);
    static final int EVERY_S = 5;
    static final int GONE_S = 45;
    /** An entry that did not change is rewritten this often (GONE_S allows one write to fail). */
    static final int UNCHANGED_S = 20;
    /** A Redis clock sample older than this is refreshed with a TIME before the entry is written. */
    static final int CLOCK_FRESH_S = 300;
    /** The served topics' "last served" is rewritten at least this often. */
    static final int ACTIVE_S = 600;
    private Replica lastAnnounced;
    private long lastAnnouncedAtNanos;
    /** The counters when the entry was last written: unmoved since, only falling rates change. */
    private Map<String, DelayqMetrics.Totals> lastTotals;
    private volatile List<String> lastActiveServes = List.of();
    private volatile long lastActiveAtNanos;
    /** Snapshots kept: a minute and one. */
    private static final int WINDOW = 60 / EVERY_S + 1;

    private final ReplicaStore store;
    private final DelayqMetrics metrics;
    private final TopicRegistry topics;
    private final Dispatcher dispatcher;
    private final ObjectMapper mapper;
    private final RedisClock clock;
    private final Deque<Snapshot> snapshots = new ArrayDeque<>();

    private record Snapshot(long atNanos, Map<String, DelayqMetrics.Totals> totals) {
    }

    /** A replica's entry. Rates are per second over the last minute (less just after its start). */
    @RegisterForReflection
    public record Replica(String id, List<String> serves, long seenMs, Map<String, Rates> rates) {
    }

    @RegisterForReflection
    public record Rates(double enqueued, double succeeded, double failed, double latenessP99Ms) {
    }

    public ReplicaRegistry(ReplicaStore store, DelayqMetrics metrics, TopicRegistry topics, Dispatcher dispatcher,
            ObjectMapper mapper, RedisClock clock) {
        this.clock = clock;
        this.store = store;
        this.metrics = metrics;
        this.topics = topics;
        this.dispatcher = dispatcher;
        this.mapper = mapper;
    }

    @Scheduled(every = EVERY_S + "s", delayed = "1s", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void announce() {
        try {
            Replica unstamped = self();
            Map<String, DelayqMetrics.Totals> totals = lastSnapshotTotals();
            // An idle replica's entry stays the same, or changes only as the last minute's rates
            // fall: rewrite it only as often as readers need to see it alive, so that it costs
            // Redis an HSET per UNCHANGED_S, not per EVERY_S.
            long now = System.nanoTime();
            boolean quiet = unstamped.equals(lastAnnounced)
                    || (lastAnnounced != null && unstamped.serves().equals(lastAnnounced.serves()) && sameCounts(totals, lastTotals));
            boolean active = !unstamped.serves().equals(lastActiveServes) || now - lastActiveAtNanos >= ACTIVE_S * 1_000_000_000L;
            if (quiet && !active && now - lastAnnouncedAtNanos < UNCHANGED_S * 1_000_000_000L) {
                return;
            }
            if (!clock.sampled() || clock.sampleAgeNanos() > CLOCK_FRESH_S * 1_000_000_000L) {
                long before = clock.monotonicNanos();
                long redisNow = store.redisTimeMs();
                clock.observe(redisNow, before, clock.monotonicNanos());
            }
            long redisNow = clock.redisNow();
            Replica self = new Replica(unstamped.id(), unstamped.serves(), redisNow, unstamped.rates());
            store.putReplica(dispatcher.replicaId(), mapper.writeValueAsString(self),
                    active ? self.serves() : List.of(), redisNow);
            lastAnnounced = unstamped;
            lastAnnouncedAtNanos = now;
            lastTotals = totals;
            if (active) {
                lastActiveServes = unstamped.serves();
                lastActiveAtNanos = now;
            }
        } catch (JsonProcessingException | RuntimeException e) {
            LOG.debugf("could not announce this replica: %s", e.toString());
        }
    }

    /**
     * The served topics' "last served" is written again with the next announce (within
     * {@value #EVERY_S} s), as after a change of the served topics: for a Redis that lost it (a
     * restart without persistence), and the tests.
     */
    public void refreshActive() {
        lastActiveServes = List.of();
    }

    private synchronized Map<String, DelayqMetrics.Totals> lastSnapshotTotals() {
        return snapshots.getLast().totals();
    }

    /** Whether no job was counted between the two snapshots' counters (null: none yet). */
    static boolean sameCounts(Map<String, DelayqMetrics.Totals> a, Map<String, DelayqMetrics.Totals> b) {
        if (a == null || b == null || !a.keySet().equals(b.keySet())) {
            return false;
        }
        for (Map.Entry<String, DelayqMetrics.Totals> e : a.entrySet()) {
            DelayqMetrics.Totals x = e.getValue(), y = b.get(e.getKey());
            if (x.enqueued() != y.enqueued() || x.succeeded() != y.succeeded() || x.failed() != y.failed()
                    || !java.util.Arrays.equals(x.latenessCumulative(), y.latenessCumulative())) {
                return false;
            }
        }
        return true;
    }

    void onStop(@Observes @Priority(10) ShutdownEvent event) {
        try {
            store.forgetReplicas(List.of(dispatcher.replicaId()));
        } catch (RuntimeException e) {
            LOG.debugf("could not withdraw this replica: %s", e.toString());
        }
    }

    /** This replica's entry (seenMs 0: stamped when written), taking a new snapshot of its counters. */
    synchronized Replica self() {
        Map<String, DelayqMetrics.Totals> now = new HashMap<>();
        for (String topic : metrics.topics()) {
            now.put(topic, metrics.totals(topic));
        }
        Snapshot current = new Snapshot(System.nanoTime(), now);
        snapshots.addLast(current);
        while (snapshots.size() > WINDOW) {
            snapshots.removeFirst();
        }
        Snapshot first = snapshots.getFirst();
        double seconds = (current.atNanos() - first.atNanos()) / 1e9;
        Map<String, Rates> rates = new TreeMap<>();
        now.forEach((topic, t) -> rates.put(topic, rates(first.totals().get(topic), t, seconds)));
        List<String> serves = dispatcher.taking() ? new ArrayList<>(topics.handlers().keySet()) : List.of();
        serves.sort(null);
        return new Replica(dispatcher.replicaId(), serves, 0, rates);
    }

    private static Rates rates(DelayqMetrics.Totals before, DelayqMetrics.Totals after, double seconds) {
        if (before == null || seconds < 1) {
            return new Rates(0, 0, 0, p99(null, after));
        }
        return new Rates(round((after.enqueued() - before.enqueued()) / seconds),
                round((after.succeeded() - before.succeeded()) / seconds),
                round((after.failed() - before.failed()) / seconds), p99(before, after));
    }

    /** The bucket bound (ms) under which 99 % of the window's lateness samples fall; -1 with none. */
    static double p99(DelayqMetrics.Totals before, DelayqMetrics.Totals after) {
        double[] counts = after.latenessCumulative();
        int n = counts.length;
        if (n == 0) {
            return -1;
        }
        double[] base = before == null || before.latenessCumulative().length != n ? new double[n]
                : before.latenessCumulative();
        double total = counts[n - 1] - base[n - 1];
        if (total <= 0) {
            return -1;
        }
        for (int i = 0; i < n; i++) {
            if (counts[i] - base[i] >= 0.99 * total) {
                return round(after.latenessBoundsSec()[i] * 1000);
            }
        }
        return round(after.latenessBoundsSec()[n - 1] * 1000);
    }

    private static double round(double v) {
        return Math.round(v * 100) / 100.0;
    }

    /**
     * The ids of the replicas that serve the topic now: the live ones whose entry says so, and this
     * one while it takes the topic's jobs (before its first entry is written too).
     */
    public List<String> servers(String topic) {
        List<String> ids = new ArrayList<>();
        live().forEach((id, r) -> {
            if (r.serves().contains(topic)) {
                ids.add(id);
            }
        });
        if (dispatcher.taking() && topics.serves(topic) && !ids.contains(dispatcher.replicaId())) {
            ids.add(dispatcher.replicaId());
        }
        return ids;
    }

    /** The live replicas' entries, by id; entries of replicas gone (by Redis time) are dropped from Redis. */
    public Map<String, Replica> live() {
        Map<String, Replica> out = new TreeMap<>();
        List<String> gone = new ArrayList<>();
        ReplicaStore.ReplicaEntries entries = store.replicasNow();
        long now = entries.redisNowMs();
        entries.entries().forEach((id, json) -> {
            try {
                Replica r = mapper.readValue(json, Replica.class);
                if (now - r.seenMs() > GONE_S * 1000L) {
                    gone.add(id);
                } else {
                    out.put(id, r);
                }
            } catch (JsonProcessingException e) {
                gone.add(id);
            }
        });
        store.forgetReplicas(gone);
        return out;
    }
}
