package io.delayq.outbox;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

import org.postgresql.PGConnection;

/**
 * PostgreSQL's LISTEN/NOTIFY for the relay, apart so that the driver's classes are only loaded on
 * PostgreSQL: a commit that wrote rows wakes the relays at once, and an idle relay waits on its
 * connection's socket without sending a query.
 */
final class PgWake {
    private PgWake() {
    }

    /** Listens on the outbox's channel on {@code c} (autocommit on: LISTEN takes effect at commit). */
    static boolean listen(Connection c) throws SQLException {
        if (!c.isWrapperFor(PGConnection.class)) {
            return false;
        }
        try (Statement s = c.createStatement()) {
            s.execute("LISTEN " + OutboxTable.CHANNEL);
        }
        return true;
    }

    /** Waits up to {@code ms} for a notification (true) on a connection that {@link #listen}s. */
    static boolean await(Connection c, long ms) throws SQLException {
        var got = c.unwrap(PGConnection.class).getNotifications((int) Math.max(1, ms));
        return got != null && got.length > 0;
    }
}
