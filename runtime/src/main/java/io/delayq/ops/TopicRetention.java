package io.delayq.ops;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.core.ForgetResult;
import io.delayq.core.TopicControl;
import io.delayq.store.RedisClock;
import io.delayq.store.TopicAdmin;
import io.quarkus.scheduler.Scheduled;

/**
 * Forgets, by itself, a topic with no jobs that no replica has served for
 * {@code delayq.topics-retention}, as {@code DELETE /topics/{t}} would. No leader: every replica
 * looks at one known topic a minute, in turn (a page of the topics SET read ahead now and then),
 * so that an idle replica pays a few commands a minute for it however many topics Redis knows. A
 * look that finds jobs (or remembered dedup ids) records the topic as in use now; one that finds
 * a topic never recorded starts its clock; the served ones are recorded by the replica registry's
 * writes; at the end of each round the records of topics that are not known (served once, never
 * given a job) go past their retention. Two replicas forgetting one topic at once is harmless
 * (one finds it unknown).
 */
@ApplicationScoped
public class TopicRetention {
    private static final Logger LOG = Logger.getLogger(TopicRetention.class);
    /** Names read ahead per SSCAN (Redis returns a small set whole). */
    private static final int PAGE = 16;
    /** The pause between two rounds over the known topics (a few topics: not a round every minute). */
    static final int ROUND_MIN_S = 600;
    private final TopicAdmin store;
    private final TopicControl control;
    private final RedisClock clock;
    private final Duration retention;
    private final Deque<String> ahead = new ArrayDeque<>();
    private String cursor = "0";
    private long roundEndedNanos;
    private boolean rounded;
    private final io.delayq.dispatch.TopicRegistry served;
    private final io.delayq.dispatch.Dispatcher dispatcher;

    public TopicRetention(TopicAdmin store, TopicControl control, RedisClock clock, DelayqConfig config,
            io.delayq.dispatch.TopicRegistry served, io.delayq.dispatch.Dispatcher dispatcher) {
        this.served = served;
        this.dispatcher = dispatcher;
        this.store = store;
        this.control = control;
        this.clock = clock;
        this.retention = config.topicsRetention();
    }

    @Scheduled(every = "60s", delayed = "60s", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    synchronized void lookAtNext() {
        try {
            boolean scanned = false;
            String topic = null;
            while (topic == null) {
                if (ahead.isEmpty()) {
                    if (scanned || cursor.equals("0") && rounded
                            && System.nanoTime() - roundEndedNanos < ROUND_MIN_S * 1_000_000_000L) {
                        return; // at most one SSCAN a minute, and a pause between rounds
                    }
                    scanned = true;
                    TopicAdmin.TopicPage page = store.scanTopics(cursor, PAGE);
                    cursor = page.cursor();
                    ahead.addAll(page.topics());
                    if (cursor.equals("0")) {
                        // A round over every known topic ends: also drop what is recorded of topics not
                        // known (served once, never a job), past their retention.
                        store.dropStaleActivity(clock.redisNow() - retention.toMillis());
                        rounded = true;
                        roundEndedNanos = System.nanoTime();
                    }
                    continue;
                }
                String next = ahead.pollFirst();
                if (!(dispatcher.taking() && served.serves(next))) {
                    topic = next;
                }
            }
            look(topic, retention);
        } catch (RuntimeException e) {
            LOG.debugf("topic retention: no look this minute: %s", e.toString());
        }
    }

    /**
     * Looks at one topic and forgets it when it has been out of use longer than {@code retention}
     * (the test seam: any retention); true when it was forgotten.
     */
    public boolean look(String topic, Duration retention) {
        long now = clock.redisNow();
        TopicAdmin.Activity a = store.activity(topic);
        if (a.inUse() || a.lastActiveMs() < 0) {
            store.markActive(topic, now);
            return false;
        }
        if (now - a.lastActiveMs() < retention.toMillis()) {
            return false;
        }
        ForgetResult r = control.forget(topic);
        if (r.outcome() == ForgetResult.Outcome.FORGOTTEN) {
            LOG.infof("forgot topic %s: no jobs, and no replica served it for %s (delayq.topics-retention)", topic,
                    retention);
            return true;
        }
        if (r.outcome() == ForgetResult.Outcome.SERVED) {
            // Its registry entry refreshes it anyway; recorded now in case that one is older.
            store.markActive(topic, now);
        }
        return false;
    }
}
