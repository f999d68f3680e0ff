package io.delayq.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.delayq.bench.ChaosChecker.Delivery;
import io.delayq.bench.ChaosChecker.Job;
import io.delayq.bench.ChaosChecker.Verdict;
import io.delayq.bench.Nemesis.Fault;

class ChaosCheckerTest {
    private static final long LEASE = 6000;
    private final ChaosChecker checker = new ChaosChecker(LEASE);

    private static Delivery d(String id, int replica, long start) {
        return new Delivery(id, 1, replica, start, start + 500, true);
    }

    @Test
    void anAcceptedJobNeverDeliveredIsLostAndFailsTheRun() {
        Verdict v = checker.check(List.of(new Job("a", 1000, true), new Job("b", 1000, true)), List.of(d("a", 0, 1010)), List.of());
        assertEquals(1, v.figures().get("lost"));
        assertEquals(List.of("b"), v.lostIds());
        assertFalse(v.ok());
    }

    @Test
    void aJobNoReplicaAcceptedIsNotLost() {
        Verdict v = checker.check(List.of(new Job("a", 1000, true), new Job("b", 1000, false)), List.of(d("a", 0, 1010)), List.of());
        assertEquals(0, v.figures().get("lost"));
        assertEquals(1L, v.figures().get("not_accepted"));
        assertTrue(v.ok());
    }

    @Test
    void aRerunAfterItsHolderWasFrozenDuringTheFirstDeliveryIsExplained() {
        Fault freeze = new Fault("freeze", 0, 1200, 10_000);
        Verdict v = checker.check(List.of(new Job("a", 1000, true)), List.of(d("a", 0, 1010), d("a", 1, 8500)), List.of(freeze));
        assertEquals(1L, v.figures().get("dup_explained"));
        assertEquals("holder-faulted:freeze", v.duplicates().get(0).explanation());
        assertTrue(v.ok());
    }

    @Test
    void aRerunWithNoFaultOfItsHolderIsUnexplainedAndFailsTheRun() {
        Fault otherReplica = new Fault("kill", 2, 1200, 5000);
        Verdict v = checker.check(List.of(new Job("a", 1000, true)), List.of(d("a", 0, 1010), d("a", 1, 8500)), List.of(otherReplica));
        assertEquals(1L, v.figures().get("dup_unexplained"));
        assertEquals("unexplained", v.duplicates().get(0).explanation());
        assertFalse(v.ok());
    }

    @Test
    void aHolderFaultThatEndedBeforeTheFirstDeliveryExplainsNothing() {
        Fault earlier = new Fault("partition", 0, 100, 900);
        Verdict v = checker.check(List.of(new Job("a", 1000, true)), List.of(d("a", 0, 1010), d("a", 1, 8500)), List.of(earlier));
        assertFalse(v.ok());
    }

    @Test
    void aRerunDuringARedisOutageIsUnexplainedButNamedSo() {
        Fault pause = new Fault("redis-pause", -1, 1200, 9000);
        Verdict v = checker.check(List.of(new Job("a", 1000, true)), List.of(d("a", 0, 1010), d("a", 1, 9500)), List.of(pause));
        assertEquals("unexplained-near-redis-fault", v.duplicates().get(0).explanation());
        assertFalse(v.ok());
    }

    @Test
    void aRerunSoonAfterARedisOutageIsUnexplainedButNamedSo() {
        Fault kill = new Fault("redis-kill", -1, 1200, 6000);
        Verdict v = checker.check(List.of(new Job("a", 1000, true)), List.of(d("a", 0, 9000), d("a", 1, 11_000)), List.of(kill));
        assertEquals("unexplained-near-redis-fault", v.duplicates().get(0).explanation());
        assertFalse(v.ok());
    }

    @Test
    void aFrozenHolderStartingTheJobRightAfterItsThawWhileItWasRetakenIsExplained() {
        // replica 0 took the job and froze before its call went out; replica 1 retook it; 0 thawed and called
        Fault freeze = new Fault("freeze", 0, 1005, 11_000);
        Verdict v = checker.check(List.of(new Job("a", 1000, true)), List.of(d("a", 1, 8500), d("a", 0, 11_050)), List.of(freeze));
        assertEquals("stale-holder:freeze", v.duplicates().get(0).explanation());
        assertTrue(v.ok());
    }

    @Test
    void oneFaultExplainsOneRerunNotTwo() {
        Fault freeze = new Fault("freeze", 0, 1200, 12_000);
        Verdict v = checker.check(List.of(new Job("a", 1000, true)),
                List.of(d("a", 0, 1010), d("a", 1, 8500), d("a", 2, 9000)), List.of(freeze));
        assertEquals(2, v.figures().get("duplicates"));
        assertEquals(1L, v.figures().get("dup_unexplained"));
        assertFalse(v.ok());
    }

    @Test
    @SuppressWarnings("unchecked")
    void latenessIsJudgedAgainstTheFaultItFellIn() {
        Fault pause = new Fault("redis-pause", -1, 10_000, 15_000); // bound 5 + 6 + 2 = 13 s
        List<Job> jobs = List.of(new Job("warm", 100, true), new Job("outside", 1000, true), new Job("within", 11_000, true),
                new Job("beyond", 11_000, true));
        Verdict v = checker.check(jobs, List.of(d("warm", 0, 3100), d("outside", 0, 1100), d("within", 1, 15_200),
                d("beyond", 2, 25_000)), List.of(pause), 500);
        assertEquals(3000L, ((Map<String, Object>) v.figures().get("late_ms_warm_up")).get("max"));
        Map<String, Object> outside = (Map<String, Object>) v.figures().get("late_ms_outside_faults");
        Map<String, Object> during = (Map<String, Object>) v.figures().get("late_ms_during_faults");
        assertEquals(1, outside.get("n"));
        assertEquals(100L, outside.get("max"));
        assertEquals(2, during.get("n"));
        assertEquals(1L, v.figures().get("late_beyond_bound"));
        assertEquals(14_000L - 13_000L, v.figures().get("late_max_over_bound_ms"));
    }
}
