package io.delayq.ui;

import io.delayq.security.DelayqAccessPolicy;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.FormParam;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;

import io.quarkus.vertx.http.security.AuthorizationPolicy;

/**
 * A plain HTML form page and its form action beside the dashboard, guarded the way every delayq
 * resource is (the security tests post a classic form to it, which the dashboard never does).
 */
@Path("/delayq/test-dashboard")
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
public class TestDashboard {
    @GET
    @Produces(MediaType.TEXT_HTML)
    public String page() {
        return "<form method=\"post\" action=\"/delayq/test-dashboard/pause\"><input name=\"topic\"></form>";
    }

    @POST
    @Path("/pause")
    @Consumes(MediaType.APPLICATION_FORM_URLENCODED)
    @Produces(MediaType.TEXT_HTML)
    public String pause(@FormParam("topic") String topic) {
        return "<p>paused " + topic + "</p>";
    }
}
