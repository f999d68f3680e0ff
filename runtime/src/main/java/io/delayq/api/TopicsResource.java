package io.delayq.api;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import org.jboss.resteasy.reactive.server.ServerExceptionMapper;
import org.eclipse.microprofile.openapi.annotations.Operation;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.delayq.core.InvalidJobException;
import io.delayq.core.JobValidator;
import io.delayq.dispatch.Dispatcher;
import io.delayq.dispatch.TopicRegistry;
import io.delayq.store.DeadJob;
import io.delayq.store.JobStore;
import io.delayq.store.TopicStats;
import io.delayq.security.DelayqAccessPolicy;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.vertx.http.security.AuthorizationPolicy;

/** Topics overview and the dead-letter set. */
@IfBuildProperty(name = "delayq.api.enabled", stringValue = "true", enableIfMissing = true)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
@Path("/topics")
@Produces(MediaType.APPLICATION_JSON)
public class TopicsResource {
    private final JobStore store;
    private final TopicRegistry registry;
    private final Dispatcher dispatcher;

    public TopicsResource(JobStore store, TopicRegistry registry, Dispatcher dispatcher) {
        this.store = store;
        this.registry = registry;
        this.dispatcher = dispatcher;
    }

    /**
     * @param runningHere jobs of the topic running on this replica right now
     * @param servedBy what runs the topic on this replica (observer, HTTP target), null when not served here
     */
    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record TopicView(String topic, long scheduled, long inflight, long dead, String nextDueAt, boolean served,
            String servedBy, Integer runningHere) {
    }

    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record DeadView(String id, String topic, String diedAt, String runAt, int attempts, String lastError,
            String payload) {
    }

    @GET
    @Operation(summary = "Every topic with scheduled, inflight and dead counts, next due time, and whether this replica serves it")
    public List<TopicView> topics() {
        Map<String, Integer> running = dispatcher.runningByTopic();
        List<TopicView> out = new ArrayList<>();
        List<String> listed = new ArrayList<>();
        for (TopicStats s : store.topics()) {
            listed.add(s.topic());
            out.add(view(s, running));
        }
        // Served topics with no job yet are shown too: "served" is what an operator looks for.
        for (String topic : registry.handlers().keySet()) {
            if (!listed.contains(topic)) {
                out.add(view(new TopicStats(topic, 0, 0, 0, -1), running));
            }
        }
        return out;
    }

    private TopicView view(TopicStats s, Map<String, Integer> running) {
        boolean served = registry.serves(s.topic());
        return new TopicView(s.topic(), s.scheduled(), s.inflight(), s.dead(),
                s.nextDue() < 0 ? null : Instant.ofEpochMilli(s.nextDue()).toString(), served,
                served ? registry.handlers().get(s.topic()).describe() : null,
                served ? running.getOrDefault(s.topic(), 0) : null);
    }

    @GET
    @Path("/{topic}/dead")
    @Operation(summary = "Dead jobs of a topic, newest first, with their last error")
    public List<DeadView> dead(@PathParam("topic") String topic, @QueryParam("limit") @DefaultValue("100") String limit) {
        JobValidator.checkTopic("topic", topic);
        int n;
        try {
            n = Integer.parseInt(limit);
        } catch (NumberFormatException e) {
            n = -1;
        }
        if (n < 1 || n > 1000) {
            throw new InvalidJobException("limit", "limit must be an integer between 1 and 1000");
        }
        List<DeadView> out = new ArrayList<>();
        for (DeadJob d : store.dead(topic, n)) {
            out.add(new DeadView(d.id(), topic, Instant.ofEpochMilli(d.diedAt()).toString(),
                    Instant.ofEpochMilli(d.record().runAt()).toString(), d.record().attempts(),
                    d.record().lastError().isEmpty() ? null : d.record().lastError(), d.record().payloadOrNull()));
        }
        return out;
    }

    @POST
    @Path("/{topic}/dead/{id}/requeue")
    @Operation(summary = "Put a dead job back to scheduled, due now, attempts reset")
    public JobsResource.Enqueued requeue(@PathParam("topic") String topic, @PathParam("id") String id) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        Instant runAt = store.revive(topic, id)
                .orElseThrow(() -> new JobsResource.NotFound("no dead job " + id + " in topic " + topic));
        return new JobsResource.Enqueued(id, topic, runAt.toString(), "scheduled", 0, null);
    }

    @DELETE
    @Path("/{topic}/dead/{id}")
    @Operation(summary = "Purge one dead job")
    public Response purge(@PathParam("topic") String topic, @PathParam("id") String id) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        if (!store.purge(topic, id)) {
            throw new JobsResource.NotFound("no dead job " + id + " in topic " + topic);
        }
        return Response.noContent().build();
    }

    /** Errors of this resource as problem bodies (local: the service's own resources are left alone). */
    @ServerExceptionMapper
    public Response problem(RuntimeException e, UriInfo uri) {
        return ProblemMappers.problem(e, uri);
    }
}
