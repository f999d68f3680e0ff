package io.delayq.api;

import java.util.List;
import java.util.Locale;

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

import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonRawValue;
import com.fasterxml.jackson.annotation.JsonUnwrapped;

import io.delayq.core.InvalidJobException;
import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.JobValidator;
import io.delayq.security.DelayqAccessPolicy;
import io.delayq.store.BulkActions;
import io.delayq.store.JobListing;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.vertx.http.security.AuthorizationPolicy;

/**
 * A topic's jobs as a whole: {@code GET /topics/{topic}/jobs}, its jobs in one state page by page (see
 * {@link JobListing}), and {@code POST .../cancel}, {@code .../reschedule} of the scheduled ones that match a
 * filter (see {@link BulkActions}).
 */
@IfBuildProperty(name = "delayq.api.enabled", stringValue = "true", enableIfMissing = true)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
@Path("/topics/{topic}/jobs")
@Produces(MediaType.APPLICATION_JSON)
public class TopicJobsResource {
    private final JobListing listing;
    private final BulkActions bulk;
    private final JobBodyParser parser;

    public TopicJobsResource(JobListing listing, BulkActions bulk, JobBodyParser parser) {
        this.listing = listing;
        this.bulk = bulk;
        this.parser = parser;
    }

    /** A listed job: the body of {@code GET /jobs/{topic}/{id}}, with its payload when {@code fields=full}. */
    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ListedJob(@JsonUnwrapped JobInfo job,
            @Schema(description = "The payload as enqueued (any JSON value); only with fields=full, absent when the "
                    + "job has none") @JsonRawValue String payload) {
    }

    /** A page of jobs and the cursor of the next page, null when the listing is complete. */
    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.ALWAYS)
    public record JobPage(List<ListedJob> jobs,
            @Schema(description = "Pass it as cursor= for the next page; null: nothing is left", nullable = true)
            String cursor) {
    }

    @GET
    @Operation(summary = "A topic's jobs in one state, page by page: scheduled by runAt, inflight by id, dead and "
            + "succeeded newest first", description = "Scheduled jobs that their group holds back (held: true) come first, by group then "
                    + "runAt (they are due already), then the others in runAt order. Each call examines at most "
                    + JobListing.EXAMINED + " jobs of each partition, so a page may hold fewer than limit jobs (none "
                    + "even) while its cursor is not null; following the cursor until it is null lists every job that "
                    + "stayed in the state meanwhile exactly once (jobs added or moved meanwhile may or may not be). "
                    + "state=succeeded lists, newest first, the succeeded jobs the topic's result-retention keeps, with "
                    + "finishedAt, and their result with fields=full only (an empty page with cursor null without a "
                    + "retention). 200 "
                    + "{\"jobs\": [...], \"cursor\": \"...\" | null}; 400 names the parameter at fault")
    public JobPage list(@PathParam("topic") String topic,
            @Parameter(description = "scheduled (default), inflight, dead or succeeded") @QueryParam("state")
            @DefaultValue("scheduled") String state,
            @Parameter(description = "Only jobs whose id starts with it") @QueryParam("idPrefix") String idPrefix,
            @Parameter(description = "Only jobs of this group") @QueryParam("group") String group,
            @Parameter(description = "Only jobs whose runAt is at or after this instant (ISO-8601)") @QueryParam("from")
            String from,
            @Parameter(description = "Only jobs whose runAt is at or before this instant (ISO-8601)") @QueryParam("to")
            String to,
            @Parameter(description = "Jobs per page, 1 to " + JobListing.MAX_LIMIT + " (to " + JobListing.MAX_FULL_LIMIT
                    + " with fields=full); default 100") @QueryParam("limit") @DefaultValue("100") String limit,
            @Parameter(description = "The cursor of the previous page; none for the first") @QueryParam("cursor")
            String cursor,
            @Parameter(description = "full: each job with its payload (and a succeeded one with its result)")
            @QueryParam("fields") String fields) {
        JobValidator.checkTopic("topic", topic);
        JobState s = state(state);
        boolean full = fields != null && !fields.isEmpty();
        if (full && !fields.equals("full")) {
            throw new InvalidJobException("fields", "fields must be full (or absent)");
        }
        int n = limit(limit, full ? JobListing.MAX_FULL_LIMIT : JobListing.MAX_LIMIT);
        JobListing.Filter filter = BulkBody.filter(idPrefix, group, from, to);
        JobListing.Page page;
        try {
            page = listing.list(topic, s, filter, n, full, cursor == null || cursor.isEmpty() ? null : cursor);
        } catch (JobListing.BadCursor e) {
            throw new InvalidJobException("cursor", e.getMessage());
        }
        return new JobPage(page.jobs().stream().map(l -> new ListedJob(l.info(), l.payload())).toList(), page.cursor());
    }

    private static JobState state(String state) {
        return switch (state.toLowerCase(Locale.ROOT)) {
            case "scheduled" -> JobState.SCHEDULED;
            case "inflight" -> JobState.INFLIGHT;
            case "dead" -> JobState.DEAD;
            case "succeeded" -> JobState.SUCCEEDED;
            default -> throw new InvalidJobException("state", "state must be scheduled, inflight, dead or succeeded");
        };
    }

    /** A limit parameter: an integer from 1 to max, else a 400 naming {@code limit}. */
    static int limit(String limit, int max) {
        int n;
        try {
            n = Integer.parseInt(limit);
        } catch (NumberFormatException e) {
            n = -1;
        }
        if (n < 1 || n > max) {
            throw new InvalidJobException("limit", "limit must be an integer between 1 and " + max
                    + (max == JobListing.MAX_FULL_LIMIT ? " with fields=full" : ""));
        }
        return n;
    }

    /** How many scheduled jobs a bulk cancel deleted. */
    @RegisterForReflection
    public record Cancelled(long cancelled) {
    }

    /** How many scheduled jobs a bulk reschedule moved. */
    @RegisterForReflection
    public record Rescheduled(long rescheduled) {
    }

    @POST
    @Path("/cancel")
    @Operation(summary = "Cancel the scheduled jobs that match a filter (every scheduled job without one)",
            description = "Body (optional): {\"idPrefix\": \"tenant7-\", \"group\": \"g\", \"from\": \"<ISO-8601>\", "
                    + "\"to\": \"<ISO-8601>\"} (from and to bound runAt, inclusive); none or {} means every scheduled job. "
                    + "Walks each partition's jobs once, " + BulkActions.STEP + " per atomic script call, acting on "
                    + "the jobs scheduled and matching when the walk reaches them (jobs in flight or dead are left; "
                    + "jobs enqueued meanwhile may or may not be included; none twice). 200 {\"cancelled\": n}")
    public Cancelled cancel(@PathParam("topic") String topic, String body) {
        JobValidator.checkTopic("topic", topic);
        return new Cancelled(bulk.cancel(topic, BulkBody.cancel(body, parser).filter()));
    }

    @POST
    @Path("/reschedule")
    @Operation(summary = "Move the scheduled jobs that match a filter to a new runAt",
            description = "Body: the filter of POST .../cancel with exactly one of {\"delayMs\"} (from the time of "
                    + "the call, the same for every job) and {\"runAt\"}, under the PATCH's rules. Walks as the cancel "
                    + "does; a job already at the new runAt is not counted. 200 {\"rescheduled\": n}")
    public Rescheduled reschedule(@PathParam("topic") String topic, String body) {
        JobValidator.checkTopic("topic", topic);
        BulkBody.Parsed p = BulkBody.reschedule(body, parser);
        return new Rescheduled(bulk.reschedule(topic, p.filter(), p.timing().delayed(), p.timing().millis()));
    }

    /** Errors of this resource as problem bodies (local: the service's own resources are left alone). */
    @ServerExceptionMapper
    public Response problem(RuntimeException e, UriInfo uri) {
        return ProblemMappers.problem(e, uri);
    }
}
