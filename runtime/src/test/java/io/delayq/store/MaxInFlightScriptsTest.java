package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * The concurrency cap inside the take script, driven directly on topics no replica serves: a take
 * leases at most the partition's share less its in-flight set, a held-back take leaves the
 * "capped" mark, and the steps that free a slot answer it with a wake-up. "cap-config" has
 * {@code delayq.topics.cap-config.max-in-flight=2} in this class's {@code STORE}.
 */
class MaxInFlightScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured(
            "delayq.topics.cap-config.max-in-flight", "2");
    JobQueue store = STORE.queue;
    TopicAdmin topicAdmin = STORE.topicAdmin;
    Keys keys = STORE.keys;

    private void enqueueDue(Partition p, String prefix, int n) {
        List<NewJob> batch = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            batch.add(new NewJob(p.topic(), prefix + i, true, 0, 0, null));
        }
        store.enqueue(p, batch, "");
    }

    private final Set<Integer> older = new HashSet<>();

    private TakeResult take(Partition p, int want, String token, List<Lease> acks) {
        return store.take(p, want, 30_000, token, older, acks, 0);
    }

    @Test
    void aTakeLeasesAtMostTheCapLessWhatIsInFlightAndCarriedAcksFreeSlots() {
        String topic = HandBuiltStore.fresh("cap-take");
        Partition p = store.partitionsOf(topic).get(0);
        enqueueDue(p, "j", 10);
        assertEquals(3, topicAdmin.setMaxInFlight(topic, 3).maxInFlight());
        TakeResult first = take(p, 10, "A:", List.of());
        assertEquals(3, first.jobs().size(), "10 due, 10 wanted, a cap of 3");
        assertTrue(first.capped(), "held back while jobs are due");
        assertFalse(first.paused());
        TakeResult second = take(p, 10, "B:", List.of());
        assertEquals(0, second.jobs().size(), "3 in flight: no room");
        assertTrue(second.capped());
        try (Resp redis = HandBuiltStore.resp()) {
            assertNotNull(redis.str("GET", keys.capped(p)), "the mark is left for the steps that free a slot");
            assertEquals(3L, redis.num("ZCARD", keys.inflight(p)));
        }
        TakeResult third = take(p, 10, "C:", List.of(first.jobs().get(0).lease(), first.jobs().get(1).lease()));
        assertEquals(2, third.jobs().size(), "the two carried acks freed two slots, and only those");
        assertTrue(third.capped());
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(3L, redis.num("ZCARD", keys.inflight(p)));
        }
        assertEquals(3, topicAdmin.flows(List.of(topic)).get(topic).inflight(), "the flow read counts them");
    }

    @Test
    void eachStepThatFreesASlotOfACappedPartitionWakesTheTakersAndOnlyThen() throws Exception {
        String topic = HandBuiltStore.fresh("cap-free");
        Partition p = store.partitionsOf(topic).get(0);
        enqueueDue(p, "k", 8);
        topicAdmin.setMaxInFlight(topic, 2);
        try (Subscriber sub = new Subscriber(keys.wakeChannel(p)); Resp redis = HandBuiltStore.resp()) {
            // Not held back (fewer wanted than the cap allows): no mark, and an ack publishes nothing.
            TakeResult one = take(p, 1, "A:", List.of());
            assertEquals(1, one.jobs().size());
            assertFalse(one.capped());
            assertNull(redis.str("GET", keys.capped(p)));
            assertTrue(store.ack(p, List.of(one.jobs().get(0).lease())).isEmpty());
            assertEquals(0, sub.published(), "an uncapped partition's ack wakes nobody");

            TakeResult held = take(p, 10, "B:", List.of());
            assertEquals(2, held.jobs().size());
            assertTrue(held.capped());
            store.ack(p, List.of(held.jobs().get(0).lease()));
            assertEquals(1, sub.published(), "the ack of a capped partition wakes the takers");
            assertNull(redis.str("GET", keys.capped(p)), "once: the mark went with it");
            store.ack(p, List.of(held.jobs().get(1).lease()));
            assertEquals(0, sub.published(), "no take was held back since: no wake-up");

            TakeResult again = take(p, 10, "C:", List.of());
            assertEquals(2, again.jobs().size());
            assertTrue(again.capped());
            assertEquals(FailOutcome.Kind.RETRY,
                    store.fail(p, again.jobs().get(0).lease(), 60_000, "boom", 5).kind());
            assertEquals(1, sub.published(), "a failure frees a slot");

            assertTrue(take(p, 10, "D:", List.of()).capped());
            assertTrue(store.snooze(p, again.jobs().get(1).lease(), false, 60_000).isPresent());
            assertEquals(1, sub.published(), "a snooze frees a slot");

            TakeResult d = take(p, 10, "E:", List.of());
            assertEquals(1, d.jobs().size(), "one slot was free");
            assertTrue(take(p, 10, "F:", List.of()).capped());
            assertEquals(1, store.requeue(p, List.of(d.jobs().get(0).lease())), "a drain puts one back");
            assertTrue(sub.published() >= 1, "a drain's put-back frees a slot");
        }
    }

    @Test
    void expiredLeasesStillCountUntilReclaimedAndTheReclaimFreesTheirSlots() throws Exception {
        String topic = HandBuiltStore.fresh("cap-reclaim");
        Partition p = store.partitionsOf(topic).get(0);
        enqueueDue(p, "r", 4);
        topicAdmin.setMaxInFlight(topic, 2);
        assertEquals(2, store.take(p, 2, 1, "A:", older, List.of(), 0).jobs().size()); // 1 ms leases: "died"
        try (Resp redis = HandBuiltStore.resp()) {
            long deadline = (long) Double.parseDouble(redis.str("ZSCORE", keys.inflight(p), "r0"));
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5)).until(() -> {
                List<Object> t = redis.list("TIME");
                return Long.parseLong(t.get(0).toString()) * 1000 + Long.parseLong(t.get(1).toString()) / 1000 > deadline;
            });
        }
        assertTrue(take(p, 10, "B:", List.of()).capped(), "expired but not reclaimed: still in flight");
        try (Subscriber sub = new Subscriber(keys.wakeChannel(p))) {
            assertEquals(2, store.reclaim(p, 100, 10, 5, List.of(), 0, 0, 1.0, 0, 0)[0]);
            assertTrue(sub.published() >= 1);
        }
        assertEquals(2, take(p, 10, "C:", List.of()).jobs().size(), "room again");
    }

    @Test
    void theOperatorsCapWinsOverTheConfiguredOneUntilDeleted() {
        String topic = "cap-config"; // delayq.topics.cap-config.max-in-flight=2
        Partition p = store.partitionsOf(topic).get(0);
        try (Resp redis = HandBuiltStore.resp()) {
            redis.call("DEL", keys.jobs(p), keys.inflight(p), keys.leases(p), keys.next(p), keys.days(p),
                    keys.maxInFlight(p), keys.capped(p), keys.due(p, Keys.dayOf(System.currentTimeMillis())));
        }
        enqueueDue(p, "c", 10);
        assertEquals(2, take(p, 10, "A:", List.of()).jobs().size(), "the configuration's 2");
        assertEquals(5, topicAdmin.setMaxInFlight(topic, 5).maxInFlight());
        TakeResult more = take(p, 10, "B:", List.of());
        assertEquals(3, more.jobs().size(), "the operator's 5 wins: 3 more");
        assertNull(topicAdmin.clearMaxInFlight(topic).maxInFlight(), "deleted");
        assertEquals(0, take(p, 10, "C:", List.of()).jobs().size(), "the configuration's 2 again, 5 in flight");
        assertEquals(2, topicAdmin.configuredMaxInFlight(topic).getAsInt());
    }

    @Test
    void raisingTheCapWakesTheTakersItHeldBack() throws Exception {
        String topic = HandBuiltStore.fresh("cap-raise");
        Partition p = store.partitionsOf(topic).get(0);
        enqueueDue(p, "u", 5);
        topicAdmin.setMaxInFlight(topic, 1);
        assertTrue(take(p, 10, "A:", List.of()).capped());
        try (Subscriber sub = new Subscriber(keys.wakeChannel(p))) {
            topicAdmin.setMaxInFlight(topic, 3);
            assertEquals(1, sub.published());
        }
        assertEquals(2, take(p, 10, "B:", List.of()).jobs().size());
    }

    /**
     * A subscriber of a wake-up channel: {@link #published} sends a PING and counts the messages
     * that come before its reply, i.e. those published by the steps before it (Redis answers in order).
     */
    static final class Subscriber implements AutoCloseable {
        private final java.net.Socket socket;
        private final java.io.InputStream in;

        Subscriber(String channel) throws java.io.IOException {
            socket = new java.net.Socket("127.0.0.1", HandBuiltStore.server().port());
            socket.setSoTimeout(10_000);
            in = new java.io.BufferedInputStream(socket.getInputStream());
            send("SUBSCRIBE", channel);
            read(); // the confirmation
        }

        int published() throws java.io.IOException {
            send("PING");
            int n = 0;
            while (true) {
                List<?> r = (List<?>) read();
                String kind = r.get(0).toString();
                if ("pong".equals(kind)) {
                    return n;
                }
                if ("message".equals(kind)) {
                    n++;
                }
            }
        }

        private void send(String... args) throws java.io.IOException {
            StringBuilder b = new StringBuilder("*" + args.length + "\r\n");
            for (String a : args) {
                b.append('$').append(a.getBytes(java.nio.charset.StandardCharsets.UTF_8).length).append("\r\n").append(a)
                        .append("\r\n");
            }
            socket.getOutputStream().write(b.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }

        private Object read() throws java.io.IOException {
            int type = in.read();
            StringBuilder line = new StringBuilder();
            for (int c; (c = in.read()) != '\r';) {
                line.append((char) c);
            }
            in.read();
            return switch (type) {
                case '*' -> {
                    List<Object> items = new ArrayList<>();
                    for (int i = Integer.parseInt(line.toString()); i > 0; i--) {
                        items.add(read());
                    }
                    yield items;
                }
                case '$' -> {
                    byte[] b = in.readNBytes(Integer.parseInt(line.toString()) + 2);
                    yield new String(b, 0, b.length - 2, java.nio.charset.StandardCharsets.UTF_8);
                }
                default -> line.toString();
            };
        }

        @Override
        public void close() throws java.io.IOException {
            socket.close();
        }
    }
}
