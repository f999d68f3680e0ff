package com.example.outbox;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.transaction.Transactional;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.core.Response;

import org.eclipse.microprofile.config.inject.ConfigProperty;

import io.agroal.api.AgroalDataSource;
import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.quarkus.runtime.StartupEvent;

/**
 * {@code POST /orders} opens an order and schedules the job that closes it, in one transaction:
 * with {@code delayq.transactions=outbox} the job is a row of {@code delayq_outbox} written on the
 * same connection, so the order and its close job commit together or not at all, whether Redis is
 * up or not. {@code GET /orders/{id}} shows the order and how many times its close job ran.
 */
@Path("/orders")
@ApplicationScoped
public class Orders {
    static final String TOPIC = "order-close";

    private final AgroalDataSource db;
    private final Jobs jobs;
    private final Duration closeAfter;

    public Orders(AgroalDataSource db, Jobs jobs, @ConfigProperty(name = "orders.close-after") Duration closeAfter) {
        this.db = db;
        this.jobs = jobs;
        this.closeAfter = closeAfter;
    }

    void schema(@Observes StartupEvent start) throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, status TEXT NOT NULL,"
                    + " close_runs INT NOT NULL DEFAULT 0)");
        }
    }

    @POST
    @Transactional
    public Response open() throws SQLException {
        String id = UUID.randomUUID().toString();
        try (Connection c = db.getConnection();
                PreparedStatement p = c.prepareStatement("INSERT INTO orders (id, status) VALUES (?, 'OPEN')")) {
            p.setString(1, id);
            p.executeUpdate();
        }
        // Inside the transaction: a row of delayq_outbox, committed with the order.
        jobs.schedule(JobRequest.topic(TOPIC).id(id).delay(closeAfter));
        return Response.status(201).entity(Map.of("id", id)).build();
    }

    @GET
    @Path("{id}")
    public Map<String, Object> get(@PathParam("id") String id) throws SQLException {
        try (Connection c = db.getConnection();
                PreparedStatement p = c.prepareStatement("SELECT status, close_runs FROM orders WHERE id = ?")) {
            p.setString(1, id);
            try (ResultSet rs = p.executeQuery()) {
                if (!rs.next()) {
                    throw new NotFoundException("no order " + id);
                }
                return Map.of("id", id, "status", rs.getString(1), "closeRuns", rs.getInt(2));
            }
        }
    }
}
