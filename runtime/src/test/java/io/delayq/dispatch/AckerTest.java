package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.delayq.store.HandBuiltStore;
import io.delayq.store.JobQueue;
import io.delayq.store.Lease;
import io.delayq.store.Partition;
import io.delayq.store.ResultRetention;

/**
 * What one ack call carries (the Acker's own flush, or a take's acks): at most 1000 acks, and
 * results of at most {@link Acker#MAX_BATCH_RESULT_BYTES} beyond the first ack's, so that a script
 * call never holds its Redis for the seconds a thousand results near the payload limit take.
 */
class AckerTest {
    private static final String TOPIC = "acker-results";
    private final JobQueue store = HandBuiltStore.queue("delayq.topics." + TOPIC + ".result-retention", "10m");
    private final Acker acker = new Acker(store, new ReclaimGate(30_000, 10_000, System::nanoTime));
    private final Partition p = new Partition(TOPIC, 0);

    @Test
    void oneCallCarriesResultsUpToTheByteBoundAndTheRestFollowInLaterCalls() {
        // 40 results of 60,003 bytes (2.4 MB, well within 1000 acks), results of 3 bytes per char
        // among them, and 10 acks without a result.
        String ascii = ResultRetention.kept("\"" + "x".repeat(60_000) + "\"");
        String wide = ResultRetention.kept("\"" + "€".repeat(20_000) + "\"");
        Set<Lease> all = new HashSet<>();
        for (int i = 0; i < 50; i++) {
            Lease l = new Lease("j" + i, "t:" + i);
            acker.ack(p, l, i >= 40 ? null : i % 2 == 0 ? ascii : wide);
            all.add(l);
        }
        List<Lease> seen = new ArrayList<>();
        int calls = 0;
        for (List<Lease> batch; !(batch = acker.drain(p, 1000)).isEmpty(); calls++) {
            long bytes = 0;
            for (Lease l : batch) {
                String r = store.stagedResult(l);
                bytes += r == null ? 0 : ResultFields.utf8(r);
            }
            assertTrue(bytes <= Acker.MAX_BATCH_RESULT_BYTES, "one call carried " + bytes + " bytes of results");
            seen.addAll(batch);
        }
        assertEquals(all, new HashSet<>(seen), "every ack sent");
        assertEquals(50, seen.size(), "each once");
        assertTrue(calls >= 3, calls + " calls for 2.4 MB of results");
    }

    @Test
    void aResultLargerThanTheBoundStillGoesAloneInItsCall() {
        Lease big = new Lease("big", "t:big"), small = new Lease("small", "t:small");
        acker.ack(p, big, ResultRetention.kept("\"" + "y".repeat(Acker.MAX_BATCH_RESULT_BYTES + 10) + "\""));
        acker.ack(p, small, ResultRetention.kept("1"));
        assertEquals(List.of(big), acker.drain(p, 1000));
        assertEquals(List.of(small), acker.drain(p, 1000));
        assertEquals(List.of(), acker.drain(p, 1000));
    }
}
