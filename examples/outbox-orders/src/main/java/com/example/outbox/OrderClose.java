package com.example.outbox;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.agroal.api.AgroalDataSource;
import io.delayq.core.Job;
import io.delayq.core.JobTopic;

/**
 * Closes an order when its job falls due. It counts its runs in the order's row
 * ({@code close_runs}), so that a run twice would show; closing is conditional on the order
 * still being open, as any at-least-once handler should be.
 */
@ApplicationScoped
public class OrderClose {
    private static final Logger LOG = Logger.getLogger(OrderClose.class);

    private final AgroalDataSource db;

    public OrderClose(AgroalDataSource db) {
        this.db = db;
    }

    void close(@Observes @JobTopic(Orders.TOPIC) Job job) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement p = c.prepareStatement(
                "UPDATE orders SET close_runs = close_runs + 1,"
                        + " status = CASE WHEN status = 'OPEN' THEN 'CLOSED' ELSE status END WHERE id = ?")) {
            p.setString(1, job.id());
            if (p.executeUpdate() == 1) {
                LOG.infof("order %s closed", job.id());
            }
        }
    }
}
