package com.example.orders;

import java.math.BigDecimal;
import java.net.URI;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

import com.example.orders.Order.State;

/** {@code POST /orders}, {@code GET /orders/{id}}, {@code POST /orders/{id}/pay}. */
@Path("/orders")
@Produces(MediaType.APPLICATION_JSON)
public class OrderResource {
    private final Orders orders;

    public OrderResource(Orders orders) {
        this.orders = orders;
    }

    /** The body of {@code POST /orders}: {@code {"item": "book", "amount": 12.5}}. */
    public record NewOrder(String item, BigDecimal amount) {
    }

    /** 201 with the order, PENDING; it closes unless paid within {@code orders.payment-timeout}. */
    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    public Response place(NewOrder body) {
        if (body == null || body.item() == null || body.item().isBlank()) {
            throw refused(Response.Status.BAD_REQUEST, "item is required");
        }
        if (body.amount() == null || body.amount().signum() <= 0) {
            throw refused(Response.Status.BAD_REQUEST, "amount must be greater than 0");
        }
        Order order = orders.place(body.item(), body.amount());
        return Response.created(URI.create("/orders/" + order.id())).entity(order).build();
    }

    @GET
    @Path("/{id}")
    public Order get(@PathParam("id") String id) {
        return orders.find(id).orElseThrow(() -> refused(Response.Status.NOT_FOUND, "no order " + id));
    }

    /** 200 with the order PAID (also when paid before); 409 when it was closed first. */
    @POST
    @Path("/{id}/pay")
    public Order pay(@PathParam("id") String id) {
        Order order = orders.pay(id).orElseThrow(() -> refused(Response.Status.NOT_FOUND, "no order " + id));
        if (order.state() == State.CLOSED) {
            throw refused(Response.Status.CONFLICT, "order " + id + " was closed unpaid");
        }
        return order;
    }

    /** An error reply whose body says what was wrong (a bare exception would send an empty body). */
    private static WebApplicationException refused(Response.Status status, String reason) {
        return new WebApplicationException(
                Response.status(status).type(MediaType.TEXT_PLAIN).entity(reason + "\n").build());
    }
}
