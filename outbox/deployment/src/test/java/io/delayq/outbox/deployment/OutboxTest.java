package io.delayq.outbox.deployment;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;

import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.agroal.api.AgroalDataSource;
import io.delayq.core.InvalidJobException;
import io.delayq.core.Job;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.delayq.core.ReactiveJobs;
import io.delayq.dev.Resp;
import io.delayq.outbox.OutboxReadiness;
import io.delayq.outbox.OutboxRelay;
import io.delayq.outbox.OutboxStatus;
import io.delayq.store.JobQueue;
import io.delayq.store.Keys;
import io.delayq.store.Partition;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.test.QuarkusUnitTest;

/**
 * The transactional outbox on a real PostgreSQL (Debian's, {@link OwnPostgres}) and a real Redis:
 * a commit gives one job, a rollback none, bad input fails before a row is written, relays beside
 * each other run no job twice, a row refused while another enqueue of its id may still land waits
 * for it, and the rows committed while Redis (or then the database) was down are all relayed once
 * it is back. Two partitions, so that an id can be claimed by another partition's enqueue.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OutboxTest {
    private static final String REDIS = "outbox";

    @RegisterExtension
    static final QuarkusUnitTest app = OwnPostgres.datasource(new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClasses(Orders.class, Runs.class, OwnPostgres.class, OwnRedis.class)))
            .overrideConfigKey("quarkus.redis.hosts", OwnRedis.uri(REDIS))
            .overrideConfigKey("delayq.transactions", "outbox")
            .overrideConfigKey("delayq.partitions", "2");

    static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
    private static final Duration LONG = Duration.ofSeconds(60);

    @ApplicationScoped
    static class Runs {
        void commit(@Observes @JobTopic("outbox-commit") Job job) {
            ran(job);
        }

        void twice(@Observes @JobTopic("outbox-twice") Job job) {
            ran(job);
        }

        void down(@Observes @JobTopic("outbox-down") Job job) {
            ran(job);
        }

        void kept(@Observes @JobTopic("outbox-kept") Job job) {
            ran(job);
        }

        private static void ran(Job job) {
            RUNS.computeIfAbsent(job.topic() + "/" + job.id(), k -> new AtomicInteger()).incrementAndGet();
        }
    }

    @ApplicationScoped
    static class Orders {
        @Inject
        Jobs jobs;

        @Inject
        ReactiveJobs reactive;

        @Inject
        AgroalDataSource db;

        @Transactional
        JobInfo place(String topic, String id) {
            return jobs.schedule(JobRequest.topic(topic).id(id).payload(Map.of("order", id)));
        }

        /** A batch through ReactiveJobs, inside the transaction as well. */
        @Transactional
        List<JobInfo> placeTwo(String topic, String a, String b) {
            return reactive.scheduleAll(List.of(JobRequest.topic(topic).id(a), JobRequest.topic(topic).id(b))).await()
                    .atMost(LONG);
        }

        @Transactional
        void placeThenFail(String topic, String id) {
            jobs.schedule(JobRequest.topic(topic).id(id));
            throw new IllegalStateException("the order could not be placed");
        }

        /** Bad input inside a transaction: the rows this transaction sees afterwards. */
        @Transactional
        long rejectedThenRows() throws SQLException {
            assertThrows(InvalidJobException.class, () -> jobs.schedule(JobRequest.topic("outbox-commit").id("x")
                    .maxAttempts(-1)));
            assertThrows(InvalidJobException.class, () -> jobs.schedule(JobRequest.topic("not a topic!").id("x")));
            return rows(db);
        }
    }

    @Inject
    Orders orders;

    @Inject
    Jobs jobs;

    @Inject
    AgroalDataSource db;

    @Inject
    OutboxRelay relay;

    @Inject
    OutboxStatus status;

    @Inject
    MeterRegistry registry;

    @Inject
    @Readiness
    OutboxReadiness readiness;

    @Inject
    JobQueue queue;

    @Inject
    Keys keys;

    @Test
    void aCommitGivesOneJobAndARollbackNone() throws SQLException {
        JobInfo pending = orders.place("outbox-commit", "order-42");
        assertTrue(pending.pendingCommit());
        assertNull(pending.state());
        assertEquals("order-42", pending.id());
        await().atMost(LONG).until(() -> ran("outbox-commit/order-42") == 1 && rows(db) == 0);

        assertThrows(IllegalStateException.class, () -> orders.placeThenFail("outbox-commit", "order-43"));
        assertEquals(0, rows(db), "a rolled-back transaction leaves no row");
        // A later commit is relayed; the rolled-back job is nowhere.
        orders.place("outbox-commit", "order-44");
        await().atMost(LONG).until(() -> ran("outbox-commit/order-44") == 1 && rows(db) == 0);
        assertEquals(0, ran("outbox-commit/order-43"));
        assertTrue(jobs.get("outbox-commit", "order-43").isEmpty());
        assertEquals(1, ran("outbox-commit/order-42"));

        // Outside a transaction the job goes straight to Redis, as without the outbox.
        JobInfo direct = jobs.schedule(JobRequest.topic("outbox-commit").id("order-45").delay(Duration.ofHours(1)));
        assertEquals(JobState.SCHEDULED, direct.state());
        assertEquals(0, rows(db));
    }

    @Test
    void badInputIsRejectedBeforeARowIsWritten() throws SQLException {
        assertEquals(0, orders.rejectedThenRows());
    }

    @Test
    void relaysBesideEachOtherRunNoJobTwice() throws Exception {
        double before = relayedTotal();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger byOthers = new AtomicInteger();
        List<Thread> others = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            others.add(Thread.ofPlatform().start(() -> {
                try (Connection c = db.getConnection()) {
                    c.setAutoCommit(false);
                    while (!stop.get()) {
                        byOthers.addAndGet(relay.pass(c));
                    }
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        int n = 100;
        for (int i = 0; i < n; i++) {
            List<JobInfo> two = orders.placeTwo("outbox-twice", "a" + i, "b" + i);
            assertTrue(two.get(0).pendingCommit() && two.get(1).pendingCommit());
        }
        try {
            await().atMost(LONG).until(() -> rows(db) == 0 && RUNS.keySet().stream().filter(k -> k.startsWith("outbox-twice/"))
                    .count() == 2 * n);
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            throw new AssertionError("rows " + rows(db) + ", ran " + RUNS.keySet().stream().filter(k -> k.startsWith("outbox-twice/"))
                    .count() + ", relayed by others " + byOthers + ", by the replica " + (relayedTotal() - before) + ", problem "
                    + status.problem() + ", others alive " + others.stream().filter(Thread::isAlive).count(), e);
        }
        stop.set(true);
        for (Thread t : others) {
            t.join();
        }
        // Every row relayed once, by one of the three relays (each pass counts in the same meter),
        // and every job ran once.
        assertEquals(2 * n, relayedTotal() - before, "rows relayed, " + byOthers + " of them by the test's relays");
        for (int i = 0; i < n; i++) {
            assertEquals(1, ran("outbox-twice/a" + i));
            assertEquals(1, ran("outbox-twice/b" + i));
        }
    }

    /**
     * An id is one job over a topic's partitions: an enqueue of it with a group that puts it in
     * another partition first claims it in its home partition, and while that enqueue may still
     * land (30 s from the claim) a relayed row of the id is refused with a retryable
     * {@link io.delayq.core.IdTakenException}. The relay keeps that row (the other rows of its pass
     * go on), and relays it once the claim is gone: here the other enqueue never lands (its
     * replica died, say), its claim lapses, and the relay's next pass drops it and enqueues the row.
     */
    @Test
    void aRowRefusedWhileAnotherEnqueueOfItsIdMayLandIsKeptAndRelayedOnceThatClaimIsGone() throws SQLException {
        String topic = "outbox-kept";
        String kept = "k0";
        Partition home = queue.partitionOf(topic, kept);
        String other = IntStream.range(1, 100).mapToObj(i -> "k" + i).filter(id -> queue.partitionOf(topic, id).equals(home))
                .findFirst().orElseThrow();
        int elsewhere = (home.index() + 1) % 2;
        try (Resp redis = new Resp(OwnRedis.port(REDIS))) {
            List<Object> time = redis.list("TIME");
            long now = Long.parseLong(time.get(0).toString()) * 1000 + Long.parseLong(time.get(1).toString()) / 1000;
            // The claim that enqueue wrote (claim.lua's "<partition>:<ms>:<group>"), its time ahead
            // of Redis' clock so that it stands however slow this machine is.
            redis.call("HSET", keys.claims(home), kept, elsewhere + ":" + (now + 600_000) + ":g");
            orders.placeTwo(topic, kept, other);
            await().atMost(LONG).until(() -> ran(topic + "/" + other) == 1 && rows(db) == 1);
            assertEquals(List.of(kept), rowIds(), "the refused row stays");
            assertTrue(jobs.get(topic, kept).isEmpty(), "and is not relayed while the claim stands");

            // That enqueue never landed: its claim is older than 30 s and no job of the other partition backs it.
            redis.call("HSET", keys.claims(home), kept, elsewhere + ":" + (now - 60_000) + ":g");
            await().atMost(LONG).until(() -> ran(topic + "/" + kept) == 1 && rows(db) == 0);
            assertNull(redis.call("HGET", keys.claims(home), kept), "the lapsed claim was dropped");
            assertEquals(1, ran(topic + "/" + other));
        }
    }

    @Test
    @Order(Integer.MAX_VALUE) // the database restarts: the others would meet its closed connections
    void rowsCommittedWhileRedisAndThenTheDatabaseWereDownAreAllRelayed() throws SQLException {
        OwnRedis.kill(REDIS);
        int n = 20;
        try {
            for (int i = 0; i < n; i++) {
                assertTrue(orders.place("outbox-down", "d" + i).pendingCommit(), "the transaction commits without Redis");
            }
            assertEquals(n, rows(db));
            await().atMost(LONG).until(() -> status.problem() != null && status.rows() == n);
            HealthCheckResponse ready = readiness.call();
            assertEquals(HealthCheckResponse.Status.UP, ready.getStatus());
            assertTrue(ready.getData().get().get("relay").toString().startsWith("waiting"), ready.getData().toString());
            assertEquals(n, registry.get("delayq.outbox.rows").gauge().value());
            // The database goes down too, and comes back after Redis.
            OwnPostgres.stop();
        } finally {
            OwnRedis.start(REDIS);
            OwnPostgres.start();
        }
        await().atMost(LONG).ignoreExceptions().until(() -> rows(db) == 0);
        await().atMost(LONG).until(() -> RUNS.keySet().stream().filter(k -> k.startsWith("outbox-down/")).count() == n);
        for (int i = 0; i < n; i++) {
            assertEquals(1, ran("outbox-down/d" + i));
        }
        await().atMost(LONG).until(() -> status.problem() == null);
    }

    private double relayedTotal() {
        return registry.get("delayq.outbox.relayed").counter().count();
    }

    private static int ran(String key) {
        AtomicInteger n = RUNS.get(key);
        return n == null ? 0 : n.get();
    }

    private List<String> rowIds() throws SQLException {
        List<String> ids = new ArrayList<>();
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT job_id FROM delayq_outbox ORDER BY seq")) {
            while (rs.next()) {
                ids.add(rs.getString(1));
            }
        }
        return ids;
    }

    static long rows(AgroalDataSource db) throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM delayq_outbox")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
