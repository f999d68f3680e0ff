package io.delayq.ops;

import java.util.ArrayList;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.delayq.store.DeadSweep;
import io.quarkus.runtime.Startup;
import io.quarkus.scheduler.Scheduled;

/**
 * The dead set's retention ({@code delayq.dead.max-jobs}, {@code max-age}, per topic
 * {@code delayq.topics.<t>.dead.*}), seen from the replica: the burial that takes a partition over
 * its cap trims it in the same script (lib.lua's bury), and every ten minutes this replica sweeps
 * one of the topics it serves, in turn, for dead jobs and failed callbacks past their age
 * ({@link DeadSweep#trim}). Trimming is the one way a job leaves delayq without succeeding and
 * without an operator's action, so every trimmed job is counted
 * ({@code delayq_jobs_dead_trimmed_total{topic}}) and its id logged at INFO: at once for the first
 * trim of a topic in a minute, then gathered and logged by the next sweep, so that a storm of
 * deaths over a full set writes a few lines an hour per topic, not a line per death.
 */
@ApplicationScoped
@Startup
public class DeadRetention {
    private static final Logger LOG = Logger.getLogger(DeadRetention.class);
    private static final long LOG_EVERY_MS = 60_000;
    /** Ids a gathered log line names at most; the rest are counted. */
    private static final int IDS_LOGGED = 50;
    private final DeadSweep sweep;
    private final DelayqMetrics metrics;
    private final LocalTopics local;
    private final Deque<String> turn = new ArrayDeque<>();
    private final Map<String, Long> loggedAt = new HashMap<>();
    private final Map<String, Gathered> gathered = new HashMap<>();

    private static final class Gathered {
        final List<String> ids = new ArrayList<>();
        long count;
    }

    public DeadRetention(DeadSweep sweep, DelayqMetrics metrics, LocalTopics local) {
        this.sweep = sweep;
        this.metrics = metrics;
        this.local = local;
        sweep.onTrimmed(this::trimmed);
        // Deaths by expiry are counted here too: the store tells of both the same way.
        sweep.onExpired(metrics::expired);
    }

    /** Dead jobs a script removed from the topic's dead set. */
    synchronized void trimmed(String topic, List<String> ids) {
        metrics.deadTrimmed(topic, ids.size());
        long now = System.currentTimeMillis();
        Long last = loggedAt.get(topic);
        if (last == null || now - last >= LOG_EVERY_MS) {
            loggedAt.put(topic, now);
            log(topic, ids, ids.size());
            return;
        }
        Gathered g = gathered.computeIfAbsent(topic, t -> new Gathered());
        for (String id : ids) {
            if (g.ids.size() < IDS_LOGGED) {
                g.ids.add(id);
            }
        }
        g.count += ids.size();
    }

    private static void log(String topic, List<String> ids, long count) {
        LOG.infof("removed %d dead job(s) of topic %s for good: its dead set was over delayq.dead.max-jobs or past"
                + " delayq.dead.max-age (retention); ids%s: %s", count, topic, count > ids.size() ? " (the first "
                        + ids.size() + ")" : "", String.join(", ", ids));
    }

    /**
     * Logs what was gathered since the last line; sweeps the next local topic (its dead set, and
     * its stale id claims). Every ten minutes,
     * not every minute: a sweep is a few commands per partition, and an idle replica must stay
     * within its budget (ClusterIT counts it); the age bounds are days, and a burial trims by age
     * too.
     */
    @Scheduled(every = "10m", delayed = "10m", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void everyTenMinutes() {
        flush();
        if (turn.isEmpty()) {
            turn.addAll(local.all());
        }
        String topic = turn.pollFirst();
        if (topic != null) {
            sweep(topic);
        }
    }

    /** One topic's sweep (the test seam); how many dead jobs it removed. */
    public long sweep(String topic) {
        try {
            long removed = sweep.trim(topic);
            // The id claims of jobs of groups that ended (a few commands per partition, only with several).
            sweep.sweepClaims(topic);
            return removed;
        } catch (RuntimeException e) {
            LOG.debugf("dead retention: topic %s not swept this minute: %s", topic, e.toString());
            return 0;
        }
    }

    /** Writes the gathered log lines. */
    synchronized void flush() {
        long now = System.currentTimeMillis();
        gathered.forEach((topic, g) -> {
            loggedAt.put(topic, now);
            log(topic, g.ids, g.count);
        });
        gathered.clear();
    }
}
