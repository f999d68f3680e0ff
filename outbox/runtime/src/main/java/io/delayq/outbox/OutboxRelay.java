package io.delayq.outbox;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.core.IdTakenException;
import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.NewJob;
import io.delayq.core.TransactionMode;
import io.delayq.store.JobQueue;
import io.delayq.store.JobRecord;
import io.delayq.store.Partition;
import io.quarkus.arc.Unremovable;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.vertx.core.Future;

/**
 * Takes committed rows of {@code delayq_outbox} to Redis, on every replica, with no leader: each
 * pass claims a small batch with {@code FOR UPDATE SKIP LOCKED} (the other relays skip those
 * rows), enqueues them through the store's own enqueue script with their row tokens (a token
 * relayed in the last 24 h is not enqueued again: see {@link JobQueue#relayAsync}), deletes them
 * and commits. A crash anywhere leaves the rows to the next pass, and the tokens make that pass
 * harmless. Wakes on NOTIFY (each commit that wrote rows), else every poll interval.
 */
@ApplicationScoped
@Unremovable
public class OutboxRelay {
    private static final Logger LOG = Logger.getLogger(OutboxRelay.class);
    /** How often the gauges are refreshed: one cheap query, not one per pass. */
    private static final long STATS_EVERY_MS = 5_000;
    /** The longest wait after a failure (Redis or the database down): retried until it is back. */
    private static final long MAX_BACKOFF_MS = 5_000;
    /** The longest wait for a wake after a pass that relayed rows (see {@link #idle}). */
    private static final long FLOWING_MS = 100;
    /**
     * The most rows one pass claims when the passes before it were full (see {@link #run}): a
     * backlog is relayed in passes of up to this many rows, so the per-pass costs (claim, delete,
     * commit, the scripts' round trips) are shared by more rows.
     */
    static final int MAX_PASS_ROWS = 1000;

    private final OutboxDataSource dataSource;
    private final OutboxConfig config;
    private final JobQueue queue;
    private final OutboxStatus status;
    private final boolean on;
    private volatile boolean running;
    private Thread thread;
    private long statsAt;

    public OutboxRelay(OutboxDataSource dataSource, OutboxConfig config, JobQueue queue, OutboxStatus status,
            DelayqConfig delayq) {
        this.dataSource = dataSource;
        this.config = config;
        this.queue = queue;
        this.status = status;
        this.on = delayq.transactions().orElse(null) == TransactionMode.OUTBOX;
    }

    void start(@Observes StartupEvent event) {
        if (!on) {
            return;
        }
        if (config.createTable()) {
            createTable();
        }
        if (config.relay()) {
            running = true;
            thread = Thread.ofPlatform().daemon().name("delayq-outbox-relay").start(this::run);
        }
    }

    void stop(@Observes ShutdownEvent event) throws InterruptedException {
        running = false;
        if (thread != null) {
            thread.interrupt();
            thread.join(config.pollInterval().toMillis() + MAX_BACKOFF_MS);
        }
    }

    private void createTable() {
        try (Connection c = dataSource.get().getConnection(); Statement s = c.createStatement()) {
            for (String ddl : OutboxTable.DDL) {
                s.execute(ddl);
            }
        } catch (SQLException e) {
            // Two replicas creating it at once: one of them loses the race on the catalog, and
            // the table is there all the same.
            try (Connection c = dataSource.get().getConnection(); Statement s = c.createStatement()) {
                s.execute("SELECT 1 FROM delayq_outbox LIMIT 0");
                return;
            } catch (SQLException missing) {
                e.addSuppressed(missing);
            }
            throw new OutboxException("delayq_outbox could not be created (delayq.outbox.create-table): " + e.getMessage(), e);
        }
    }

    private void run() {
        Connection c = null;
        boolean listening = false;
        long backoff = 0;
        int limit = config.batchSize();
        while (running) {
            try {
                if (c == null) {
                    c = dataSource.get().getConnection();
                    listening = config.listen() && listen(c);
                    c.setAutoCommit(false);
                }
                int relayed = pass(c, limit);
                if (status.problem() != null) {
                    LOG.infof("delayq outbox: relaying again (%s before)", status.problem());
                    status.problem(null);
                }
                backoff = 0;
                refreshStats(c, false);
                if (relayed < limit) {
                    limit = config.batchSize();
                    idle(c, listening, relayed > 0);
                } else {
                    // A full pass: more rows are waiting; the next pass takes more at once.
                    limit = Math.min(Math.max(config.batchSize(), MAX_PASS_ROWS), limit * 2);
                }
            } catch (SQLException e) {
                backoff = failed("the database: " + e.getMessage(), backoff);
                close(c);
                c = null;
            } catch (RuntimeException e) {
                // Redis refused or could not be reached: the rows stay (the claim rolled back).
                rollback(c);
                backoff = failed("Redis: " + e.getMessage(), backoff);
            }
            if (backoff > 0) {
                pause(backoff);
            }
        }
        close(c);
    }

    /**
     * One claim on {@code c} (autocommit off): up to batch-size rows enqueued into Redis, then
     * deleted, and committed; how many. Public for tests that run relays beside this replica's.
     *
     * @throws RuntimeException when Redis failed (the caller rolls back: the rows stay)
     */
    public int pass(Connection c) throws SQLException {
        return pass(c, config.batchSize());
    }

    /**
     * As {@link #pass(Connection)}, up to {@code limit} rows. The claim holds at most one row per
     * job id (the oldest), so the pass's scripts touch distinct ids and are all sent (one per partition)
     * before the first answer is awaited: a pass costs about one round trip to Redis, whatever the
     * number of partitions.
     */
    int pass(Connection c, int limit) throws SQLException {
        long started = System.nanoTime();
        List<Long> seqs = new ArrayList<>();
        Map<String, Batch> batches = new LinkedHashMap<>();
        try (PreparedStatement claim = c.prepareStatement(OutboxTable.CLAIM)) {
            claim.setInt(1, limit);
            try (ResultSet rs = claim.executeQuery()) {
                while (rs.next()) {
                    seqs.add(rs.getLong(1));
                    NewJob job = new NewJob(rs.getString(3), rs.getString(4), false, rs.getLong(5), rs.getInt(6),
                            rs.getString(7), ifExists(rs.getString(8)), JobRecord.decodeRetry(rs.getString(9)),
                            rs.getString(10));
                    Partition p = queue.partitionOf(job.topic(), job.id(), job.group());
                    String trace = rs.getString(11);
                    // One script per partition, as any batch; a row's trace goes with it.
                    batches.computeIfAbsent(p.topic() + '\n' + p.index() + '\n' + trace, k -> new Batch(p, trace))
                            .add(job, rs.getString(2), rs.getLong(1));
                }
            }
        }
        long claimed = System.nanoTime();
        if (seqs.isEmpty()) {
            c.commit();
            return 0;
        }
        List<Batch> order = new ArrayList<>(batches.values());
        List<Future<List<JobInfo>>> sending = new ArrayList<>(order.size());
        for (Batch b : order) {
            sending.add(queue.relayAsync(b.partition, b.jobs, b.tokens, b.trace));
        }
        // Every answer is awaited (a failure after another script succeeded rolls the claim back:
        // the next pass sends the rows again, and their tokens make that harmless). A partition
        // that refused an id (another group's job has it) is sent again one refusal at a time.
        List<Long> kept = new ArrayList<>();
        RuntimeException failure = null;
        for (int i = 0; i < order.size(); i++) {
            try {
                try {
                    queue.await(sending.get(i));
                } catch (IdTakenException e) {
                    relay(order.get(i), kept);
                }
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
        seqs.removeAll(kept);
        long sent = System.nanoTime();
        try (PreparedStatement delete = c.prepareStatement(OutboxTable.DELETE)) {
            delete.setArray(1, c.createArrayOf("bigint", seqs.toArray()));
            delete.executeUpdate();
        }
        c.commit();
        if (LOG.isDebugEnabled()) {
            LOG.debugf("delayq outbox: pass of %d row(s), %d script(s): claim %.1f ms, Redis %.1f ms, delete and commit %.1f ms",
                    seqs.size(), batches.size(), (claimed - started) / 1e6, (sent - claimed) / 1e6, (System.nanoTime() - sent) / 1e6);
        }
        status.relayed(seqs.size());
        return seqs.size();
    }

    /**
     * One partition's rows into Redis. A row whose job id is already a job of its topic with another
     * group (in another partition: an id is one job per topic) is refused, and would be refused on
     * every pass: it is left out, with a WARN, and deleted with the others (its transaction
     * committed; the job that has the id is the one that runs). A row refused only because an enqueue
     * of its id is on its way elsewhere ({@link IdTakenException#retryable()}: no job has the id yet,
     * and the other enqueue may never land) is left out too, but kept in {@code kept}: not deleted,
     * a later pass relays it again (the rows of other ids go on).
     */
    private void relay(Batch b, List<Long> kept) {
        while (!b.jobs.isEmpty()) {
            try {
                List<JobInfo> done = queue.await(queue.relayAsync(b.partition, b.jobs, b.tokens, b.trace));
                LOG.debugf("delayq outbox: relayed %d job(s) of %s", done.size(), b.partition.topic());
                return;
            } catch (IdTakenException e) {
                int i = b.indexOf(e.id());
                if (i < 0) {
                    throw e;
                }
                if (e.retryable()) {
                    LOG.infof("delayq outbox: the row of job %s of topic %s is left for a later pass: %s", e.id(),
                            b.partition.topic(), e.getMessage());
                    kept.add(b.seqs.get(i));
                } else {
                    LOG.warnf("delayq outbox: the row of job %s of topic %s is not relayed (deleted): %s", e.id(),
                            b.partition.topic(), e.getMessage());
                }
                b.jobs.remove(i);
                b.tokens.remove(i);
                b.seqs.remove(i);
            }
        }
    }

    private void refreshStats(Connection c, boolean force) throws SQLException {
        long now = System.currentTimeMillis();
        if (!force && now - statsAt < STATS_EVERY_MS) {
            return;
        }
        statsAt = now;
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(OutboxTable.STATS)) {
            rs.next();
            status.sized(rs.getLong(1), Math.round(rs.getDouble(2) * 1000));
        }
        c.commit();
    }

    /**
     * Until a commit notifies, or a poll interval passed; after a pass that relayed rows, a
     * listening relay looks again after {@value #FLOWING_MS} ms at most. A wake that does not come
     * (a NOTIFY sent while the relay's connection was being replaced, say) would otherwise leave
     * rows for a whole poll interval while traffic flows: this bounds the relay delay's tail, and
     * costs nothing when the table is quiet (an empty pass waits the full interval again).
     */
    private void idle(Connection c, boolean listening, boolean flowing) throws SQLException {
        long ms = config.pollInterval().toMillis();
        if (listening) {
            if (flowing) {
                ms = Math.min(ms, FLOWING_MS);
            }
            long from = System.nanoTime();
            boolean woken = PgWake.await(c, ms);
            LOG.debugf("delayq outbox: %s after %.1f ms", woken ? "woken" : "not woken", (System.nanoTime() - from) / 1e6);
        } else {
            pause(ms);
        }
    }

    private boolean listen(Connection c) throws SQLException {
        try {
            return PgWake.listen(c);
        } catch (LinkageError noDriver) {
            return false; // not PostgreSQL's driver: polling only
        }
    }

    private long failed(String what, long backoff) {
        if (status.problem() == null) {
            LOG.warnf("delayq outbox: cannot relay (%s); the rows wait in delayq_outbox and are relayed when it is back",
                    what);
        }
        status.problem(what);
        try {
            if (!what.startsWith("the database")) {
                refreshStatsQuietly();
            }
        } catch (RuntimeException ignored) {
            // the gauges keep their last values
        }
        return Math.min(MAX_BACKOFF_MS, Math.max(config.pollInterval().toMillis() / 4, backoff * 2));
    }

    private void refreshStatsQuietly() {
        try (Connection c = dataSource.get().getConnection()) {
            statsAt = 0;
            c.setAutoCommit(false);
            refreshStats(c, true);
        } catch (SQLException e) {
            LOG.debugf("delayq outbox: gauges not refreshed: %s", e.getMessage());
        }
    }

    private static IfExists ifExists(String letter) {
        for (IfExists v : IfExists.values()) {
            if (v.letter().equals(letter)) {
                return v;
            }
        }
        return IfExists.KEEP;
    }

    private void pause(long ms) {
        try {
            Thread.sleep(Duration.ofMillis(ms));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            running = false;
        }
    }

    private static void rollback(Connection c) {
        try {
            if (c != null) {
                c.rollback();
            }
        } catch (SQLException e) {
            LOG.debugf("delayq outbox: rollback failed: %s", e.getMessage());
        }
    }

    private static void close(Connection c) {
        try {
            if (c != null) {
                c.close();
            }
        } catch (SQLException e) {
            LOG.debugf("delayq outbox: close failed: %s", e.getMessage());
        }
    }

    /** The rows of one partition (and one trace) of a pass: one enqueue script. */
    private static final class Batch {
        final Partition partition;
        final String trace;
        final List<NewJob> jobs = new ArrayList<>();
        final List<String> tokens = new ArrayList<>();
        final List<Long> seqs = new ArrayList<>();

        Batch(Partition partition, String trace) {
            this.partition = partition;
            this.trace = trace;
        }

        void add(NewJob job, String token, long seq) {
            jobs.add(job);
            tokens.add(token);
            seqs.add(seq);
        }

        int indexOf(String id) {
            for (int i = 0; i < jobs.size(); i++) {
                if (jobs.get(i).id().equals(id)) {
                    return i;
                }
            }
            return -1;
        }
    }
}
