package io.delayq.api;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.PATCH;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import org.jboss.resteasy.reactive.server.ServerExceptionMapper;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.JobValidator;
import io.delayq.core.Jobs;
import io.delayq.core.NewJob;
import io.delayq.core.RescheduleResult;
import io.delayq.security.DelayqAccessPolicy;
import io.delayq.store.Inspection;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.vertx.http.security.AuthorizationPolicy;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Future;

/** Enqueue, inspect and cancel jobs. */
@IfBuildProperty(name = "delayq.api.enabled", stringValue = "true", enableIfMissing = true)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
@Path("/jobs")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.WILDCARD)
public class JobsResource {
    private static final String UNAVAILABLE_ONE = "Redis unavailable (Retry-After). The problem body's id is the"
            + " job's (a generated one too) and jobs[0].outcome says whether it is stored: stored, not stored or"
            + " unknown (the write timed out or its connection was lost: it may exist). Retry with that id: no duplicate.";
    private static final String UNAVAILABLE_BATCH = "Redis unavailable (Retry-After). Jobs are written partition by"
            + " partition (one atomic script each), so a batch may fail part-way: the problem body's jobs lists every"
            + " item in request order with its id (generated ones too), topic and outcome: stored, not stored or unknown"
            + " (may exist). Retry the batch with those ids: nothing is duplicated.";
    private final Jobs jobs;
    private final Inspection store;
    private final JobBodyParser parser;

    public JobsResource(Jobs jobs, Inspection store, JobBodyParser parser) {
        this.jobs = jobs;
        this.store = store;
        this.parser = parser;
    }

    /**
     * The reply to an enqueue: the job as it is now. An id that succeeded within its topic's dedup
     * window has state {@code succeeded}, {@code finishedAt} and no {@code runAt}; a scheduled job
     * that this enqueue changed ({@code ifExists} replace or extend) has {@code replaced} true.
     */
    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Enqueued(String id, String topic, String runAt, String state, int attempts, String finishedAt,
            @Schema(description = "true when ifExists replace or extend changed the existing scheduled job; absent otherwise")
            Boolean replaced) {
        static Enqueued of(JobInfo info) {
            return new Enqueued(info.id(), info.topic(), text(info.runAt()), info.state().json(), info.attempts(),
                    text(info.finishedAt()), info.replaced() ? Boolean.TRUE : null);
        }
    }

    /**
     * One item of a batch reply: {@code status} 201 created, 200 already existed (or succeeded, or
     * was replaced: {@code replaced} true), 409 in flight and not changed by its replace or extend.
     */
    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record BatchItem(int status, String id, String topic, String runAt, String state, int attempts,
            String finishedAt,
            @Schema(description = "true when ifExists replace or extend changed the existing scheduled job; absent otherwise")
            Boolean replaced) {
    }

    /**
     * A job in flight that a replace or extend asked to change: it runs as it is (409); and any
     * enqueue of a job being cancelled (409: its id is not free until the attempt ended).
     */
    private static boolean conflict(NewJob job, JobInfo info) {
        return info.state() == JobState.INFLIGHT
                && (job.ifExists() != IfExists.KEEP || Boolean.TRUE.equals(info.cancelling()));
    }

    private static String text(Instant t) {
        return t == null ? null : t.toString();
    }

    /*
     * Both enqueues run on the event loop that read the request and hold no thread while Redis
     * works (Jobs.scheduleAllAsync: the Redis client's futures down to the script): a worker
     * thread blocked on each round trip was what capped single-job enqueue. Parsing and validation
     * are CPU only; a broken rule throws before anything is sent, as on the blocking path, and a
     * failed future (Redis away: 503, not replicated: 503) goes through the same problem mapper.
     */

    @POST
    @Operation(summary = "Enqueue one job", description = "Body: {\"topic\", \"id\"?, \"payload\"?, \"delayMs\" | \"runAt\"?, \"maxAttempts\"?, "
            + "\"retry\"?: {\"initialMs\"?, \"maxMs\"?}, \"ifExists\"?, \"timeoutMs\"?, \"expiresAt\"?}. retry is the job's own backoff in place of its topic's "
            + "retry.initial and retry.max; timeoutMs its own attempt timeout (1 ms .. 24 h); expiresAt (after runAt) when it stops being "
            + "worth starting: a job not started by then goes to the dead set as expired, as does one a replace or extend leaves due after it (200, state dead). 201 + Location for a new job; 200 with the existing job when the id exists (idempotent), or with "
            + "state succeeded and finishedAt when it succeeded within the topic's dedup window. ifExists (keep, the "
            + "default; replace; extend) says what an existing id does: replace gives a scheduled job the new payload, "
            + "runAt, maxAttempts and retry (200, replaced: true), extend does the same but never moves runAt earlier; a job in "
            + "flight is a 409 (state inflight), a dead id or one within the dedup window is enqueued anew (201).")
    @RequestBody(description = "the job")
    @APIResponse(responseCode = "201", description = "created", content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = Enqueued.class)))
    @APIResponse(responseCode = "200", description = "a job with this topic and id already exists, or succeeded"
            + " within the topic's dedup window (not run again), or was replaced (ifExists replace or extend: replaced"
            + " true)", content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = Enqueued.class)))
    @APIResponse(responseCode = "409", description = "ifExists replace or extend, and the job is in flight: it is not"
            + " changed (the problem body's state is inflight); or the job is being cancelled (any ifExists); or the id is"
            + " a job of the topic with another group (or none), in another partition: an id is one job per topic (the"
            + " problem's field is group, its id the job's; nothing written)", content = @Content(mediaType = Problem.MEDIA_TYPE,
                    schema = @Schema(implementation = Problem.class)))
    @APIResponse(responseCode = "503", description = UNAVAILABLE_ONE, content = @Content(mediaType = Problem.MEDIA_TYPE,
            schema = @Schema(implementation = Problem.class)))
    public Uni<Response> enqueue(EnqueueBody.One body, @jakarta.ws.rs.core.Context UriInfo uri,
            @HeaderParam("traceparent") String traceparent) {
        NewJob job = body.body().jobs().get(0);
        // The Location is made absolute here, on the request's thread: a relative one is resolved
        // against the current request, which is gone when Redis' reply comes back on another
        // thread (through the pool: a 500 for a stored job, seen during a Sentinel failover).
        // Joined as text, not through a UriBuilder (a tenth of the event loop's time per request in
        // a JFR of wrk against POST /jobs: URI parses and per-segment encoding): the topic and id
        // are validated to characters a path segment takes as they are (JobValidator.TOPIC, ID),
        // so the header is the same.
        String base = uri.getBaseUri().toString();
        String location = base + (base.endsWith("/") ? "" : "/") + "jobs/";
        String instance = uri.getRequestUri().getRawPath();
        return uni(jobs.scheduleAllAsync(List.of(job), traceparent).map(all -> {
            JobInfo info = all.get(0);
            if (conflict(job, info)) {
                String why = Boolean.TRUE.equals(info.cancelling()) ? "job " + info.id()
                        + " is being cancelled; its id is free once its attempt ended"
                        : "job " + info.id() + " is running; ifExists " + job.ifExists().json() + " cannot change it";
                return Problem.response(409, why, null, instance, info.id(), null, info.state().json()).build();
            }
            if (info.created()) {
                return Response.status(Response.Status.CREATED)
                        .header(jakarta.ws.rs.core.HttpHeaders.LOCATION, location + info.topic() + "/" + info.id())
                        .entity(Enqueued.of(info)).build();
            }
            return Response.ok(Enqueued.of(info)).build();
        }));
    }

    @POST
    @Path("/batch")
    @Operation(summary = "Enqueue up to 1000 jobs", description = "Body: a JSON array of jobs (or {\"jobs\": [...]}). "
            + "Validation is all-or-nothing: one invalid item → 400 naming it, nothing written; an item whose id is a job "
            + "of the topic with another group (or none) → 409 naming its group, nothing written. "
            + "Reply: one result per item, in order, status 201 (created), 200 (existed, or replaced: replaced true) or "
            + "409 (ifExists replace or extend of a job in flight: not changed, state inflight; or a job being cancelled).")
    // Declared: a documented 503 alone would leave the operation without its 2xx (a Uni's implicit one is dropped).
    @APIResponse(responseCode = "200", description = "one result per item, in request order", content = @Content(
            mediaType = MediaType.APPLICATION_JSON, schema = @Schema(type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.ARRAY,
                    implementation = BatchItem.class)))
    @APIResponse(responseCode = "409", description = "an item's id is a job of the topic with another group (or none), in"
            + " another partition: an id is one job per topic. The problem's field names the item (jobs[3].group), its id"
            + " the job's; nothing of the batch is written", content = @Content(mediaType = Problem.MEDIA_TYPE,
                    schema = @Schema(implementation = Problem.class)))
    @APIResponse(responseCode = "503", description = UNAVAILABLE_BATCH, content = @Content(mediaType = Problem.MEDIA_TYPE,
            schema = @Schema(implementation = Problem.class)))
    public Uni<List<BatchItem>> batch(EnqueueBody body, @HeaderParam("traceparent") String traceparent) {
        // Parsed as it was read, in one pass: never held as text or as a tree (JobBodyParser).
        List<NewJob> batch = body.jobs();
        return uni(jobs.scheduleAllAsync(batch, traceparent).map(all -> {
            List<BatchItem> out = new ArrayList<>(all.size());
            for (int i = 0; i < all.size(); i++) {
                JobInfo info = all.get(i);
                int status = conflict(batch.get(i), info) ? 409 : info.created() ? 201 : 200;
                out.add(new BatchItem(status, info.id(), info.topic(), text(info.runAt()), info.state().json(),
                        info.attempts(), text(info.finishedAt()), info.replaced() ? Boolean.TRUE : null));
            }
            return out;
        }));
    }

    /** A future of the store as a Uni, its failure unwrapped (the problem mapper sees the store's own exception). */
    private static <T> Uni<T> uni(Future<T> future) {
        return Uni.createFrom().emitter(e -> future.onComplete(e::complete, e::fail));
    }

    @GET
    @Path("/{topic}/{id}")
    @Operation(summary = "A job's state: scheduled, inflight or dead, with attempts, lostAttempts (leases that "
            + "expired in a row without an outcome), runAt, lastError, maxAttempts, retry, timeoutMs and expiresAt when the enqueue gave them; "
            + "succeeded with finishedAt and result (any JSON; resultDropped or resultCut when it was too large) while the "
            + "topic's result-retention keeps it, or with finishedAt alone within its dedup window")
    public JobInfo get(@PathParam("topic") String topic, @PathParam("id") String id) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        return store.get(topic, id).orElseThrow(() -> new NotFound("no job " + id + " in topic " + topic));
    }

    /** The reply to the cancel of a job in flight (202): its attempt is being ended. */
    @RegisterForReflection
    public record Cancelling(String id, String topic,
            @Schema(description = "always inflight: the job runs until its replica ends the attempt") String state,
            @Schema(description = "always true: the job will not run again, and leaves once its attempt ends")
            boolean cancelling) {
    }

    @DELETE
    @Path("/{topic}/{id}")
    @Operation(summary = "Cancel a job", description = "204 a scheduled job cancelled (it will not run); 202 a job in "
            + "flight: the cancel is recorded with it and the replica running it ends the attempt within about a second "
            + "(an HTTP target's call aborted, a synchronous observer interrupted, a reactive one's subscription "
            + "cancelled); it will not run again and then leaves (no retry, no dead entry); until then GET shows "
            + "cancelling: true and an enqueue of its id answers 409. An attempt that returned before the cancel reached "
            + "it counts as succeeded. 404 unknown (or succeeded: nothing is scheduled); 409 dead")
    @APIResponse(responseCode = "204", description = "the scheduled job is cancelled: it will not run")
    @APIResponse(responseCode = "202", description = "the job is in flight: its attempt is being ended; it will not run"
            + " again", content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = Cancelling.class)))
    public Response cancel(@PathParam("topic") String topic, @PathParam("id") String id) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        return switch (jobs.cancel(topic, id)) {
            case CANCELLED -> Response.noContent().build();
            case CANCELLING -> Response.accepted(new Cancelling(id, topic, "inflight", true)).build();
            case UNKNOWN -> throw new NotFound("no job " + id + " in topic " + topic);
            case INFLIGHT -> throw new Conflict("job " + id + " is running; it cannot be cancelled");
            case DEAD -> throw new Conflict("job " + id + " is dead; purge it with DELETE /topics/" + topic + "/dead/" + id);
        };
    }

    @PATCH
    @Path("/{topic}/{id}")
    @Operation(summary = "Reschedule a scheduled job", description = "Body: exactly one of {\"delayMs\"} and "
            + "{\"runAt\"}, under the enqueue's rules ({\"delayMs\": 0} runs it now). 200 with the job; 404 unknown; "
            + "409 in flight or dead")
    public JobInfo reschedule(@PathParam("topic") String topic, @PathParam("id") String id, String body) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        RescheduleResult r = jobs.reschedule(topic, id, parser.reschedule(body));
        return switch (r.outcome()) {
            case RESCHEDULED -> r.job();
            case UNKNOWN -> throw new NotFound("no scheduled job " + id + " in topic " + topic);
            case INFLIGHT -> throw new Conflict("job " + id + " is running; it cannot be rescheduled");
            case DEAD -> throw new Conflict("job " + id + " is dead; requeue it with POST /topics/" + topic + "/dead/"
                    + id + "/requeue");
        };
    }

    /** 404 as a problem body. */
    public static final class NotFound extends jakarta.ws.rs.NotFoundException {
        private static final long serialVersionUID = 1L;

        public NotFound(String message) {
            super(message);
        }
    }

    /** 409 as a problem body. */
    public static final class Conflict extends jakarta.ws.rs.ClientErrorException {
        private static final long serialVersionUID = 1L;

        public Conflict(String message) {
            super(message, 409);
        }
    }

    /** Errors of this resource as problem bodies (local: the service's own resources are left alone). */
    @ServerExceptionMapper
    public Response problem(RuntimeException e, UriInfo uri) {
        return ProblemMappers.problem(e, uri);
    }
}
