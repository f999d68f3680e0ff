package io.delayq.outbox;

import java.time.Duration;
import java.util.Optional;

import io.quarkus.runtime.annotations.ConfigPhase;
import io.quarkus.runtime.annotations.ConfigRoot;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;

/**
 * The transactional outbox ({@code delayq.transactions=outbox}): where its rows are written and how
 * every replica relays them to Redis.
 */
@ConfigMapping(prefix = "delayq.outbox")
@ConfigRoot(phase = ConfigPhase.RUN_TIME)
public interface OutboxConfig {
    /**
     * The Agroal datasource whose transactions the jobs commit with, and that holds the table
     * {@code delayq_outbox}. Unset: the default datasource.
     */
    Optional<String> datasource();

    /**
     * Creates the table {@code delayq_outbox} (and its index) at start when it is missing. Turn off
     * when the schema is managed by Flyway or Liquibase (the DDL is in docs/transactions.md).
     * Default true.
     */
    @WithName("create-table")
    @WithDefault("true")
    boolean createTable();

    /**
     * How often the relay looks for committed rows when nothing woke it. On PostgreSQL a commit
     * wakes it at once (LISTEN/NOTIFY), so this is a safety net; without {@code listen}, it is the
     * relay's delay. Default 1 s.
     */
    @WithName("poll-interval")
    @WithDefault("1s")
    Duration pollInterval();

    /**
     * Wakes the relay on PostgreSQL's NOTIFY, sent by every commit that wrote rows. Off: the relay
     * only polls. Default true.
     */
    @WithDefault("true")
    boolean listen();

    /**
     * Rows one relay pass claims, enqueues and deletes in one database transaction. After a full
     * pass the next one claims twice as many, up to 1,000 (a backlog goes in bigger passes), and a
     * pass that was not full brings it back to this. Default 100.
     */
    @WithName("batch-size")
    @WithDefault("100")
    int batchSize();

    /** Relays the table's rows from this replica (every replica does by default). Default true. */
    @WithName("relay")
    @WithDefault("true")
    boolean relay();
}
