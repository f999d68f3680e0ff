package io.delayq.api;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import org.jboss.resteasy.reactive.server.ServerExceptionMapper;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.delayq.core.ForgetResult;
import io.delayq.core.JobValidator;
import io.delayq.core.TopicControl;
import io.delayq.core.TopicFlow;
import io.delayq.dispatch.Dispatcher;
import io.delayq.dispatch.TopicRegistry;
import io.delayq.security.DelayqAccessPolicy;
import io.delayq.store.DeadJob;
import io.delayq.store.DeadSweep;
import io.delayq.store.Inspection;
import io.delayq.store.TopicStats;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.vertx.http.security.AuthorizationPolicy;
import io.vertx.core.http.HttpServerResponse;

/** Topics overview, flow control (pause, resume, rate limit, concurrency cap) and the dead-letter set. */
@IfBuildProperty(name = "delayq.api.enabled", stringValue = "true", enableIfMissing = true)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
@Path("/topics")
@Produces(MediaType.APPLICATION_JSON)
public class TopicsResource {
    private final Inspection store;
    private final TopicRegistry registry;
    private final Dispatcher dispatcher;
    private final TopicControl control;
    private final JobBodyParser parser;
    private final DeadSweep sweep;
    /** Header of a filtered dead list that examined only the newest dead jobs of each partition. */
    static final String TRUNCATED = "X-Delayq-Truncated";

    public TopicsResource(Inspection store, TopicRegistry registry, Dispatcher dispatcher, TopicControl control,
            JobBodyParser parser, DeadSweep sweep) {
        this.sweep = sweep;
        this.store = store;
        this.registry = registry;
        this.dispatcher = dispatcher;
        this.control = control;
        this.parser = parser;
    }

    /**
     * @param runningHere jobs of the topic running on this replica right now
     * @param servedBy what runs the topic on this replica (observer, HTTP target), null when not served here
     * @param paused no replica takes the topic's jobs (since {@code pausedAt})
     * @param rateLimit the limit its jobs are taken at, null when none
     * @param throttledUntil until when no replica takes its jobs because its HTTP target answered 429
     *        or 503 with Retry-After, null when it is not throttled
     * @param maxInFlight the concurrency cap in force ({@code max}, its {@code source}) and the jobs in
     *        flight now over all replicas ({@code inflight}); null when there is none
     * @param groupRateLimit the limit each group's jobs are taken at, null when none
     */
    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record TopicView(String topic, long scheduled, long inflight, long dead, String nextDueAt, boolean served,
            String servedBy, Integer runningHere, boolean paused, String pausedAt, TopicFlow.RateLimit rateLimit,
            String throttledUntil, TopicFlow.MaxInFlight maxInFlight, TopicFlow.RateLimit groupRateLimit) {
    }

    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record DeadView(String id, String topic, String diedAt, String runAt, int attempts, String lastError,
            String payload) {
    }

    @GET
    @Operation(summary = "Every topic with scheduled, inflight and dead counts, next due time, whether this replica "
            + "serves it, whether it is paused, its rate limit, its concurrency cap with the jobs in flight, its rate "
            + "limit per group, and until "
            + "when its HTTP target throttled it")
    public List<TopicView> topics() {
        Map<String, Integer> running = dispatcher.runningByTopic();
        List<TopicStats> stats = new ArrayList<>(store.topics());
        List<String> listed = new ArrayList<>();
        stats.forEach(s -> listed.add(s.topic()));
        // Served topics with no job yet are shown too: "served" is what an operator looks for.
        for (String topic : registry.handlers().keySet()) {
            if (!listed.contains(topic)) {
                listed.add(topic);
                stats.add(new TopicStats(topic, 0, 0, 0, -1));
            }
        }
        Map<String, Long> inflight = new java.util.HashMap<>();
        stats.forEach(s -> inflight.put(s.topic(), s.inflight()));
        Map<String, TopicFlow> flows = control.flows(listed, inflight);
        List<TopicView> out = new ArrayList<>(stats.size());
        stats.forEach(s -> out.add(view(s, running, flows.get(s.topic()))));
        return out;
    }

    private TopicView view(TopicStats s, Map<String, Integer> running, TopicFlow flow) {
        boolean served = registry.serves(s.topic());
        return new TopicView(s.topic(), s.scheduled(), s.inflight(), s.dead(),
                s.nextDue() < 0 ? null : Instant.ofEpochMilli(s.nextDue()).toString(), served,
                served ? registry.handlers().get(s.topic()).describe() : null,
                served ? running.getOrDefault(s.topic(), 0) : null,
                flow.paused(), flow.pausedAt() == null ? null : flow.pausedAt().toString(), flow.rateLimit(),
                flow.throttledUntil() == null ? null : flow.throttledUntil().toString(), flow.maxInFlight(),
                flow.groupRateLimit());
    }

    @POST
    @Path("/{topic}/pause")
    @Operation(summary = "Pause a topic: no replica takes its jobs until it is resumed (enqueue still works, jobs in "
            + "flight finish)", description = "200 with the topic's flow control")
    public TopicFlow pause(@PathParam("topic") String topic) {
        return control.pause(topic);
    }

    @POST
    @Path("/{topic}/resume")
    @Operation(summary = "Resume a paused topic: replicas take its due jobs at once", description = "200 with the "
            + "topic's flow control")
    public TopicFlow resume(@PathParam("topic") String topic) {
        return control.resume(topic);
    }

    @PUT
    @Path("/{topic}/rate-limit")
    @Operation(summary = "Set a topic's rate limit, jobs per second over all replicas", description = "Body: "
            + "{\"perSecond\": 50}. Kept in Redis, it wins over delayq.topics.<t>.rate-limit. 200 with the topic's flow control")
    public TopicFlow setRateLimit(@PathParam("topic") String topic, String body) {
        JobValidator.checkTopic("topic", topic);
        return control.setRateLimit(topic, parser.perSecond(body));
    }

    @DELETE
    @Path("/{topic}/rate-limit")
    @Operation(summary = "Remove the rate limit set over REST: the configuration's applies again", description = "200 "
            + "with the topic's flow control")
    public TopicFlow clearRateLimit(@PathParam("topic") String topic) {
        return control.clearRateLimit(topic);
    }

    @PUT
    @Path("/{topic}/group-rate-limit")
    @Operation(summary = "Set a topic's rate limit per group, jobs of one group per second over all replicas",
            description = "Body: {\"perSecond\": 5}. Kept in Redis, it wins over delayq.topics.<t>.group-rate-limit. "
                    + "200 with the topic's flow control")
    public TopicFlow setGroupRateLimit(@PathParam("topic") String topic, String body) {
        JobValidator.checkTopic("topic", topic);
        return control.setGroupRateLimit(topic, parser.perSecond(body));
    }

    @DELETE
    @Path("/{topic}/group-rate-limit")
    @Operation(summary = "Remove the rate limit per group set over REST: the configuration's applies again",
            description = "200 with the topic's flow control")
    public TopicFlow clearGroupRateLimit(@PathParam("topic") String topic) {
        return control.clearGroupRateLimit(topic);
    }

    @PUT
    @Path("/{topic}/max-in-flight")
    @Operation(summary = "Set a topic's concurrency cap, jobs in flight at once over all replicas", description = "Body: "
            + "{\"max\": 5}, an integer from delayq.partitions (1 by default) up. Kept in Redis, it wins over "
            + "delayq.topics.<t>.max-in-flight. 200 with the topic's flow control")
    public TopicFlow setMaxInFlight(@PathParam("topic") String topic, String body) {
        JobValidator.checkTopic("topic", topic);
        return control.setMaxInFlight(topic, parser.maxInFlight(body));
    }

    @DELETE
    @Path("/{topic}/max-in-flight")
    @Operation(summary = "Remove the concurrency cap set over REST: the configuration's applies again",
            description = "200 with the topic's flow control")
    public TopicFlow clearMaxInFlight(@PathParam("topic") String topic) {
        return control.clearMaxInFlight(topic);
    }

    @DELETE
    @Path("/{topic}")
    @Operation(summary = "Forget a topic that holds no jobs and that no replica serves", description = "Gone from "
            + "GET /topics and the dashboard, with its pause, rate limit, tick records and dedup ids; a new job lists it "
            + "again. 204 forgotten; 404 unknown; 409 while it has jobs (scheduled, in flight or dead), dead-job "
            + "callbacks still to send, or a live replica serves it")
    @APIResponse(responseCode = "204", description = "forgotten")
    public Response forget(@PathParam("topic") String topic) {
        ForgetResult r = control.forget(topic);
        return switch (r.outcome()) {
            case FORGOTTEN -> Response.noContent().build();
            case UNKNOWN -> throw new JobsResource.NotFound(r.detail());
            case SERVED, HAS_JOBS -> throw new JobsResource.Conflict(r.detail());
        };
    }

    @GET
    @Path("/{topic}/dead")
    @Operation(summary = "Dead jobs of a topic, newest first, with their last error", description = "Optionally "
            + "filtered: idPrefix (ids that start with it) and error (lastError contains it, ASCII letters compared "
            + "without case). A filtered list examines at most the newest " + DeadSweep.LIST_EXAMINED + " dead jobs of "
            + "each partition; when it stopped there before finding limit matches, the reply carries the header "
            + TRUNCATED + " (the number examined per partition): older dead jobs may match too")
    public List<DeadView> dead(@PathParam("topic") String topic, @QueryParam("limit") @DefaultValue("100") String limit,
            @QueryParam("idPrefix") String idPrefix, @QueryParam("error") String error,
            @Context HttpServerResponse response) {
        JobValidator.checkTopic("topic", topic);
        int n = TopicJobsResource.limit(limit, 1000);
        DeadSweep.Filter filter = DeadFilters.of(idPrefix, error);
        List<DeadJob> found;
        if (filter.all()) {
            found = store.dead(topic, n);
        } else {
            DeadSweep.Listing listing = sweep.list(topic, filter, n);
            if (listing.truncated()) {
                response.putHeader(TRUNCATED, Integer.toString(DeadSweep.LIST_EXAMINED));
            }
            found = listing.jobs();
        }
        List<DeadView> out = new ArrayList<>();
        for (DeadJob d : found) {
            out.add(new DeadView(d.id(), topic, Instant.ofEpochMilli(d.diedAt()).toString(),
                    Instant.ofEpochMilli(d.record().runAt()).toString(), d.record().attempts(),
                    d.record().lastError().isEmpty() ? null : d.record().lastError(), d.record().payloadOrNull()));
        }
        return out;
    }

    /** How many dead jobs a bulk requeue put back. */
    @RegisterForReflection
    public record Requeued(long requeued) {
    }

    /** How many dead jobs a bulk purge deleted. */
    @RegisterForReflection
    public record Purged(long purged) {
    }

    @POST
    @Path("/{topic}/dead/requeue")
    @Operation(summary = "Requeue the dead jobs that match a filter (all without one): due now, attempts reset",
            description = "Body (optional): {\"idPrefix\": \"order-\", \"error\": \"timeout\"}; none or {} means every "
                    + "dead job. Acts only on jobs dead when the call began (one that dies meanwhile, a requeued one "
                    + "that fails again too, is left), walking the whole dead set " + DeadSweep.ACT_CHUNK + " jobs per "
                    + "atomic script call. 200 {\"requeued\": n}")
    public Requeued requeueDead(@PathParam("topic") String topic, String body) {
        JobValidator.checkTopic("topic", topic);
        return new Requeued(sweep.requeue(topic, DeadFilters.of(body, parser)));
    }

    @POST
    @Path("/{topic}/dead/purge")
    @Operation(summary = "Purge the dead jobs that match a filter (all without one), for good",
            description = "Body (optional): {\"idPrefix\": \"order-\", \"error\": \"timeout\"}; none or {} means every "
                    + "dead job. Acts only on jobs dead when the call began, walking the whole dead set "
                    + DeadSweep.ACT_CHUNK + " jobs per atomic script call. 200 {\"purged\": n}")
    public Purged purgeDead(@PathParam("topic") String topic, String body) {
        JobValidator.checkTopic("topic", topic);
        return new Purged(sweep.purge(topic, DeadFilters.of(body, parser)));
    }

    @POST
    @Path("/{topic}/dead/{id}/requeue")
    @Operation(summary = "Put a dead job back to scheduled, due now, attempts reset")
    public JobsResource.Enqueued requeue(@PathParam("topic") String topic, @PathParam("id") String id) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        Instant runAt = store.revive(topic, id)
                .orElseThrow(() -> new JobsResource.NotFound("no dead job " + id + " in topic " + topic));
        return new JobsResource.Enqueued(id, topic, runAt.toString(), "scheduled", 0, null, null);
    }

    @DELETE
    @Path("/{topic}/dead/{id}")
    @Operation(summary = "Purge one dead job")
    @APIResponse(responseCode = "204", description = "purged")
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
