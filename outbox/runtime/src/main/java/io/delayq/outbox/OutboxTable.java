package io.delayq.outbox;

/**
 * The table {@code delayq_outbox} and every statement on it: one row per job enqueued inside a
 * committed transaction, until a relay has enqueued it into Redis. PostgreSQL's dialect
 * ({@code FOR UPDATE SKIP LOCKED}, advisory locks, NOTIFY).
 */
final class OutboxTable {
    private OutboxTable() {
    }

    /** The channel of LISTEN/NOTIFY that wakes the relays. */
    static final String CHANNEL = "delayq_outbox";

    /**
     * The DDL (docs/transactions.md quotes it for Flyway/Liquibase users). {@code seq} orders the
     * rows of one job id as their transactions committed (see {@link #INSERT}); {@code token}
     * identifies the row in Redis' memory of relayed rows; the run time is absolute (a delay counts
     * from the enqueue, not from the relay).
     */
    static final String[] DDL = {
            """
                    CREATE TABLE IF NOT EXISTS delayq_outbox (
                        seq          BIGSERIAL PRIMARY KEY,
                        token        TEXT NOT NULL,
                        topic        TEXT NOT NULL,
                        job_id       TEXT NOT NULL,
                        run_at_ms    BIGINT NOT NULL,
                        max_attempts INT NOT NULL,
                        payload      TEXT,
                        if_exists    CHAR(1) NOT NULL,
                        retry        TEXT NOT NULL,
                        grp          TEXT,
                        trace        TEXT NOT NULL,
                        created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
                    )""",
            "CREATE INDEX IF NOT EXISTS delayq_outbox_job ON delayq_outbox (topic, job_id, seq)" };

    /**
     * One job's row, in the caller's transaction. The transaction-scoped advisory lock on the job
     * id makes a second transaction enqueueing the same id wait for the first to end before it
     * draws its {@code seq} (the subquery, kept apart by OFFSET 0, runs before the row's default
     * is computed): so {@code seq} is commit order among the rows of one id, and replace/extend
     * apply in that order. NOTIFY is delivered at commit, once per transaction.
     */
    static final String INSERT = """
            INSERT INTO delayq_outbox (token, topic, job_id, run_at_ms, max_attempts, payload, if_exists, retry, grp, trace)
            SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM (SELECT pg_advisory_xact_lock(hashtext(?)),
                pg_notify('""" + CHANNEL + "', '') OFFSET 0) AS serialised";

    /**
     * Claims up to n committed rows, each the oldest of its job id still in the table (a later row
     * of an id waits until the earlier one is deleted, whichever relay holds it), locked so that
     * the other relays skip them.
     */
    static final String CLAIM = """
            SELECT o.seq, o.token, o.topic, o.job_id, o.run_at_ms, o.max_attempts, o.payload, o.if_exists, o.retry, o.grp,
                   o.trace
            FROM delayq_outbox o
            WHERE NOT EXISTS (SELECT 1 FROM delayq_outbox e WHERE e.topic = o.topic AND e.job_id = o.job_id AND e.seq < o.seq)
            ORDER BY o.seq
            LIMIT ?
            FOR UPDATE OF o SKIP LOCKED""";

    /** Deletes relayed rows by seq (one array parameter). */
    static final String DELETE = "DELETE FROM delayq_outbox WHERE seq = ANY (?)";

    /** The gauges: rows waiting, and the age of the oldest in seconds (0 when empty). */
    static final String STATS = """
            SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM delayq_outbox""";
}
