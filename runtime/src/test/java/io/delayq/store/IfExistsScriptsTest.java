package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * ifExists replace and extend in the enqueue script, on topics no replica serves: the record, the
 * shards, "next" and the wake-up channel after each move; in flight, dead and dedup-window ids.
 */
class IfExistsScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics.dedup-mem.dedup-window", "1h");
    private static final long DAY_MS = 86_400_000L;
    JobQueue store = STORE.queue;

    private static NewJob at(String topic, String id, long runAt, String payload, IfExists mode) {
        return new NewJob(topic, id, false, runAt, 0, payload, mode);
    }

    private JobInfo enqueue(Partition p, NewJob job) {
        return store.enqueue(p, List.of(job), "").get(0);
    }

    @Test
    void replaceMovesAScheduledJobToItsNewDayWithTheNewPayloadAndMaxAttempts() {
        String topic = HandBuiltStore.fresh("ifx");
        Partition p = store.partitionsOf(topic).get(0);
        long first = System.currentTimeMillis() + 3_600_000L;
        long later = first + DAY_MS;
        assertTrue(enqueue(p, at(topic, "j", first, "1", IfExists.KEEP)).created());

        JobInfo r = store.enqueue(p, List.of(new NewJob(topic, "j", false, later, 5, "2", IfExists.REPLACE)), "").get(0);
        assertTrue(r.replaced());
        assertFalse(r.created());
        assertEquals(JobState.SCHEDULED, r.state());
        assertEquals(later, r.runAt().toEpochMilli());
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            JobRecord rec = JobRecord.decode(redis.str("HGET", k + "jobs", "j"));
            assertEquals(later, rec.runAt());
            assertEquals(5, rec.maxAttempts());
            assertEquals("2", rec.payload());
            assertNull(redis.str("ZSCORE", k + "due:" + Keys.dayOf(first), "j"), "left its old shard");
            assertEquals(Long.toString(later), redis.str("ZSCORE", k + "due:" + Keys.dayOf(later), "j"));
            assertEquals(List.of(Integer.toString(Keys.dayOf(later))), redis.list("ZRANGE", k + "days", "0", "-1"),
                    "the emptied day is no longer listed");
            assertEquals(Long.toString(later), redis.str("GET", k + "next"), "next set exactly");
        }
        // keep (the default) still answers the job as it is
        JobInfo kept = enqueue(p, at(topic, "j", first, "3", IfExists.KEEP));
        assertFalse(kept.created() || kept.replaced());
        assertEquals(later, kept.runAt().toEpochMilli());
    }

    @Test
    void extendOnlyEverMovesRunAtLaterButTakesThePayload() {
        String topic = HandBuiltStore.fresh("ifx");
        Partition p = store.partitionsOf(topic).get(0);
        long t = System.currentTimeMillis() + 3_600_000L;
        enqueue(p, at(topic, "d", t, "1", IfExists.EXTEND));
        JobInfo later = enqueue(p, at(topic, "d", t + 60_000, "2", IfExists.EXTEND));
        assertTrue(later.replaced());
        assertEquals(t + 60_000, later.runAt().toEpochMilli());
        JobInfo earlier = enqueue(p, at(topic, "d", t - 60_000, "3", IfExists.EXTEND));
        assertTrue(earlier.replaced());
        assertEquals(t + 60_000, earlier.runAt().toEpochMilli(), "extend never moves runAt earlier");
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertEquals("3", JobRecord.decode(redis.str("HGET", k + "jobs", "d")).payload());
            assertEquals(Long.toString(t + 60_000), redis.str("ZSCORE", k + "due:" + Keys.dayOf(t + 60_000), "d"));
        }
    }

    /**
     * A replace that makes the job the partition's earliest publishes it on the wake-up channel, as
     * an enqueue does, so that sleeping takers on other replicas wake; one that moves it later does
     * not (and "next" follows it).
     */
    @Test
    void replacingAJobToAnEarlierRunAtWakesTheTakers() {
        String topic = HandBuiltStore.fresh("ifx");
        Partition p = store.partitionsOf(topic).get(0);
        long t = System.currentTimeMillis() + 3_600_000L;
        enqueue(p, at(topic, "a", t, "1", IfExists.KEEP));
        enqueue(p, at(topic, "b", t + 1_000, "1", IfExists.KEEP));
        try (Resp sub = HandBuiltStore.resp(); Resp redis = HandBuiltStore.resp()) {
            sub.list("SUBSCRIBE", store.wakeChannel(p));
            // The script publishes before it answers, so a PING sent after the reply is read after
            // any message: the next read is either the wake-up or the PING's pong.
            enqueue(p, at(topic, "b", t - 30_000, "2", IfExists.REPLACE));
            assertEquals(List.of("message", store.wakeChannel(p), Long.toString(t - 30_000)), sub.list("PING"));
            assertEquals("pong", sub.list("PING").get(0), "one wake-up");
            assertEquals(Long.toString(t - 30_000), redis.str("GET", HandBuiltStore.keysOf(topic) + "next"));

            enqueue(p, at(topic, "b", t + 30_000, "3", IfExists.EXTEND));
            assertEquals("pong", sub.list("PING").get(0), "a job moved later wakes nobody");
            assertEquals(Long.toString(t), redis.str("GET", HandBuiltStore.keysOf(topic) + "next"), "next follows the job");
        }
    }

    @Test
    void aJobInFlightIsNotChangedAndADeadOneIsEnqueuedAnew() {
        String topic = HandBuiltStore.fresh("ifx");
        Partition p = store.partitionsOf(topic).get(0);
        store.enqueue(p, List.of(new NewJob(topic, "run", true, 0, 1, "1"), new NewJob(topic, "die", true, 0, 1, "1")), "");
        List<TakenJob> taken = new java.util.ArrayList<>();
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
            taken.addAll(store.take(p, 2, 30_000, "t" + taken.size() + ":", new HashSet<>(), List.of(), 0).jobs());
            return taken.size() == 2;
        });
        Lease die = taken.stream().map(TakenJob::lease).filter(l -> l.id().equals("die")).findFirst().orElseThrow();
        assertEquals(FailOutcome.Kind.DEAD, store.fail(p, die, 0, "boom", 3).kind());

        long later = System.currentTimeMillis() + 3_600_000L;
        for (IfExists mode : List.of(IfExists.REPLACE, IfExists.EXTEND)) {
            JobInfo running = enqueue(p, at(topic, "run", later, "2", mode));
            assertEquals(JobState.INFLIGHT, running.state(), mode + ": in flight");
            assertFalse(running.created() || running.replaced());
        }
        JobInfo anew = enqueue(p, at(topic, "die", later, "3", IfExists.REPLACE));
        assertTrue(anew.created(), "a dead id is a new job");
        assertEquals(JobState.SCHEDULED, anew.state());
        assertEquals(0, anew.attempts());
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertNull(redis.str("ZSCORE", k + "dead", "die"));
            JobRecord rec = JobRecord.decode(redis.str("HGET", k + "jobs", "die"));
            assertEquals("3", rec.payload());
            assertEquals(0, rec.attempts());
            assertEquals("", rec.lastError());
            assertEquals(Long.toString(later), redis.str("ZSCORE", k + "due:" + Keys.dayOf(later), "die"));
            assertEquals("1", JobRecord.decode(redis.str("HGET", k + "jobs", "run")).payload(), "untouched");
        }
    }

    /** "dedup-mem" remembers succeeded ids for an hour (see {@code STORE}). */
    @Test
    void anIdRememberedByTheDedupWindowIsEnqueuedAnewByReplaceButNotByKeep() {
        String topic = "dedup-mem";
        String id = HandBuiltStore.fresh("ifx");
        Partition p = store.partitionOf(topic, id);
        store.enqueue(p, List.of(new NewJob(topic, id, true, 0, 0, "1")), "");
        List<TakenJob> taken = new java.util.ArrayList<>();
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
            store.take(p, 100, 30_000, HandBuiltStore.fresh("t") + ":", new HashSet<>(), List.of(), 0).jobs().stream()
                    .filter(j -> j.lease().id().equals(id)).forEach(taken::add);
            return !taken.isEmpty();
        });
        assertTrue(store.ack(p, List.of(taken.get(0).lease())).isEmpty());

        long later = System.currentTimeMillis() + 3_600_000L;
        assertEquals(JobState.SUCCEEDED, enqueue(p, at(topic, id, later, "2", IfExists.KEEP)).state());
        JobInfo anew = enqueue(p, at(topic, id, later, "3", IfExists.EXTEND));
        assertTrue(anew.created());
        assertEquals(JobState.SCHEDULED, anew.state());
        try (Resp redis = HandBuiltStore.resp()) {
            assertNull(redis.str("ZSCORE", HandBuiltStore.keysOf(topic) + "done", id));
        }
        assertEquals(later, store.enqueue(p, List.of(at(topic, id, later, "4", IfExists.KEEP)), "").get(0).runAt().toEpochMilli());
    }

    /** In one batch each item sees what the items before it left: created, then replaced, then kept. */
    @Test
    void aBatchPlaysItsItemsInOrder() {
        String topic = HandBuiltStore.fresh("ifx");
        Partition p = store.partitionsOf(topic).get(0);
        long t = System.currentTimeMillis() + 3_600_000L;
        List<JobInfo> out = store.enqueue(p, List.of(at(topic, "x", t, "1", IfExists.KEEP),
                at(topic, "x", t + DAY_MS, "2", IfExists.REPLACE), at(topic, "x", t, "3", IfExists.EXTEND),
                at(topic, "x", t, "4", IfExists.KEEP)), "");
        assertTrue(out.get(0).created());
        assertTrue(out.get(1).replaced());
        assertTrue(out.get(2).replaced());
        assertEquals(t + DAY_MS, out.get(2).runAt().toEpochMilli());
        assertFalse(out.get(3).created() || out.get(3).replaced());
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertEquals("3", JobRecord.decode(redis.str("HGET", k + "jobs", "x")).payload());
            assertNull(redis.str("ZSCORE", k + "due:" + Keys.dayOf(t), "x"));
            assertEquals(Long.toString(t + DAY_MS), redis.str("ZSCORE", k + "due:" + Keys.dayOf(t + DAY_MS), "x"));
        }
    }
}
