package io.delayq.api;

import java.util.List;

import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

import io.delayq.core.JobValidator;
import io.delayq.security.DelayqAccessPolicy;
import io.delayq.store.HistoryStore;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.vertx.http.security.AuthorizationPolicy;

/** {@code GET /topics/{topic}/history}: one topic's per-minute history (see {@link HistoryResource}). */
@IfBuildProperty(name = "delayq.api.enabled", stringValue = "true", enableIfMissing = true)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
@Path("/topics/{topic}/history")
@Produces(MediaType.APPLICATION_JSON)
public class TopicHistoryResource {
    private final HistoryStore store;

    public TopicHistoryResource(HistoryStore store) {
        this.store = store;
    }

    @GET
    @Operation(summary = "Jobs of a topic enqueued, succeeded and failed and their lateness p99 per minute over the "
            + "last N minutes (oldest first, every minute present, the last one in progress)")
    public List<HistoryResource.MinuteView> topicHistory(@PathParam("topic") String topic,
            @Parameter(description = "Minutes to return, 1 to 1440 (24 hours); default 60")
            @QueryParam("minutes") @DefaultValue("60") String minutes) {
        JobValidator.checkTopic("topic", topic);
        return HistoryResource.views(store.read(topic, HistoryResource.minutes(minutes)));
    }

    /** Errors of this resource as problem bodies (local: the service's own resources are left alone). */
    @ServerExceptionMapper
    public Response problem(RuntimeException e, UriInfo uri) {
        return ProblemMappers.problem(e, uri);
    }
}
