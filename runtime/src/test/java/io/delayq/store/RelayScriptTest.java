package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * The transactional outbox's relay through the enqueue script ({@link JobQueue#relayAsync}): a
 * row's token, once relayed, enqueues nothing again for 24 h, even after its job ran; rows of one
 * id apply in the order they are relayed. On topics no replica serves.
 */
class RelayScriptTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured();
    JobQueue store = STORE.queue;

    @Test
    void aRowRelayedAgainAfterItsJobRanEnqueuesNothing() {
        String topic = HandBuiltStore.fresh("relay");
        Partition p = store.partitionsOf(topic).get(0);
        NewJob job = new NewJob(topic, "order-42", false, System.currentTimeMillis() - 1, 0, "{\"order\":42}");
        JobInfo first = relay(p, job, "row-1");
        assertTrue(first.created());
        // The job runs and is acked; the relay that sent it crashed before it deleted its row, so
        // the next relay sends the same row again.
        TakenJob taken = store.take(p, 1, 30_000, "t:", new HashSet<>(), List.of(), 0).jobs().get(0);
        assertEquals(List.of(), store.ack(p, List.of(taken.lease())));
        JobInfo again = relay(p, job, "row-1");
        assertFalse(again.created());
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertNull(redis.str("HGET", k + "jobs", "order-42"), "not enqueued again");
            long ttl = redis.num("PTTL", k + "relayed");
            assertTrue(ttl > 86_000_000L && ttl <= 86_400_000L, "remembered for 24 h: " + ttl);
        }
        // A new row of the same id (another transaction) is a new job.
        assertTrue(relay(p, job, "row-2").created());
    }

    @Test
    void rowsOfOneIdApplyInTheOrderTheyAreRelayed() {
        String topic = HandBuiltStore.fresh("relay");
        Partition p = store.partitionsOf(topic).get(0);
        long runAt = System.currentTimeMillis() + 3_600_000L;
        relay(p, new NewJob(topic, "j", false, runAt, 0, "\"first\""), "a");
        JobInfo replaced = relay(p, new NewJob(topic, "j", false, runAt + 60_000, 0, "\"second\"", IfExists.REPLACE), "b");
        assertTrue(replaced.replaced());
        // A batch mixing a row relayed before (skipped) and a new one: only the new one is written.
        List<JobInfo> both = store.await(store.relayAsync(p, List.of(new NewJob(topic, "j", false, runAt, 0, "\"first\"",
                IfExists.REPLACE), new NewJob(topic, "k", false, runAt, 0, "1")), List.of("a", "c"), ""));
        assertFalse(both.get(0).created() || both.get(0).replaced());
        assertTrue(both.get(1).created());
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            JobRecord record = JobRecord.decode(redis.str("HGET", k + "jobs", "j"));
            assertEquals("\"second\"", record.payload());
            assertEquals(runAt + 60_000, record.runAt());
            assertEquals(3, redis.num("ZCARD", k + "relayed"));
        }
    }

    private JobInfo relay(Partition p, NewJob job, String token) {
        return store.await(store.relayAsync(p, List.of(job), List.of(token), "")).get(0);
    }
}
