package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import io.delayq.store.Partition;

/** When a replica may reclaim expired leases: never within a lease of its Redis being away. */
class ReclaimGateTest {
    private static final long MS = 1_000_000;
    private final AtomicLong now = new AtomicLong(1_000_000 * MS);
    // lease 6 s, heartbeat 2 s: a call slower than 2 s counts as an outage
    private final ReclaimGate gate = new ReclaimGate(6_000, 2_000, now::get);
    private final Partition p = new Partition("t", 0);
    private final Partition other = new Partition("t", 1);

    @Test
    void aNewReplicaWaitsOneLeaseThenReclaimsWhileRedisAnswersQuickly() {
        assertFalse(gate.open(p), "started now: it may have missed an outage the holders are still catching up on");
        now.addAndGet(6_000 * MS);
        assertTrue(gate.open(p));
        long sent = now.get();
        now.addAndGet(50 * MS);
        gate.answered(p, sent);
        assertTrue(gate.open(p));
    }

    @Test
    void afterAFailedCallReclaimsWaitOneLeaseFromTheFirstAnswer() {
        gate.open(p);
        gate.open(other);
        now.addAndGet(6_000 * MS); // both known for a lease
        gate.failed(p);
        now.addAndGet(60_000 * MS);
        assertFalse(gate.open(p), "still away: nothing is reclaimed however long it lasts");
        long sent = now.get();
        gate.answered(p, sent);
        assertFalse(gate.open(p), "the holders have not had their lease to extend yet");
        now.addAndGet(5_999 * MS);
        assertFalse(gate.open(p));
        now.addAndGet(1 * MS);
        assertTrue(gate.open(p), "a lease after Redis came back, a lease not extended is abandoned");
        assertTrue(gate.open(other), "another partition (another cluster master) is not held back");
    }

    @Test
    void aCallSlowEnoughToHideALostHeartbeatCountsAsAnOutage() {
        gate.open(p);
        now.addAndGet(6_000 * MS);
        long sent = now.get();
        now.addAndGet(2_500 * MS);
        gate.answered(p, sent);
        assertFalse(gate.open(p), "Redis hung for 2.5 s: a heartbeat may have waited behind it");
        now.addAndGet(6_000 * MS);
        assertTrue(gate.open(p));
        sent = now.get();
        now.addAndGet(1_500 * MS);
        gate.answered(p, sent);
        assertTrue(gate.open(p), "1.5 s is slow, but no lease can have run out behind it");
    }

    @Test
    void aReplicaThatWasFrozenWaitsOneLeaseBeforeReclaiming() {
        gate.open(p);
        gate.open(other);
        now.addAndGet(6_000 * MS);
        gate.frozen(List.of(p, other), 1_000 * MS);
        assertTrue(gate.open(p), "a short pause is no freeze");
        gate.frozen(List.of(p, other), 10_000 * MS);
        assertFalse(gate.open(p));
        assertFalse(gate.open(other));
        now.addAndGet(6_000 * MS);
        assertTrue(gate.open(p));
    }
}
