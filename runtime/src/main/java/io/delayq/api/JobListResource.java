package io.delayq.api;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Locale;

import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.GET;
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
import io.delayq.store.JobListing;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.vertx.http.security.AuthorizationPolicy;

/** {@code GET /topics/{topic}/jobs}: a topic's jobs in one state, page by page, filtered (see {@link JobListing}). */
@IfBuildProperty(name = "delayq.api.enabled", stringValue = "true", enableIfMissing = true)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
@Path("/topics/{topic}/jobs")
@Produces(MediaType.APPLICATION_JSON)
public class JobListResource {
    private final JobListing listing;

    public JobListResource(JobListing listing) {
        this.listing = listing;
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
    @Operation(summary = "A topic's jobs in one state, page by page: scheduled by runAt, inflight by id, dead newest "
            + "first", description = "Scheduled jobs that their group holds back (held: true) come first, by group then "
                    + "runAt (they are due already), then the others in runAt order. Each call examines at most "
                    + JobListing.EXAMINED + " jobs of each partition, so a page may hold fewer than limit jobs (none "
                    + "even) while its cursor is not null; following the cursor until it is null lists every job that "
                    + "stayed in the state meanwhile exactly once (jobs added or moved meanwhile may or may not be). "
                    + "state=succeeded answers an empty page with cursor null: results are not kept (yet). 200 "
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
            @Parameter(description = "full: each job with its payload") @QueryParam("fields") String fields) {
        JobValidator.checkTopic("topic", topic);
        JobState s = state(state);
        boolean full = fields != null && !fields.isEmpty();
        if (full && !fields.equals("full")) {
            throw new InvalidJobException("fields", "fields must be full (or absent)");
        }
        int n = limit(limit, full ? JobListing.MAX_FULL_LIMIT : JobListing.MAX_LIMIT);
        if (idPrefix != null && !idPrefix.isEmpty() && !JobValidator.ID.matcher(idPrefix).matches()) {
            throw new InvalidJobException("idPrefix", "idPrefix must match " + JobValidator.ID.pattern()
                    + " (the start of an id)");
        }
        if (group != null && !group.isEmpty() && !JobValidator.ID.matcher(group).matches()) {
            throw new InvalidJobException("group", "group must match " + JobValidator.ID.pattern());
        }
        Long fromMs = instant("from", from), toMs = instant("to", to);
        if (fromMs != null && toMs != null && toMs < fromMs) {
            throw new InvalidJobException("to", "to must not be before from");
        }
        JobListing.Filter filter = new JobListing.Filter(blankToNull(idPrefix), blankToNull(group), fromMs, toMs);
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

    private static int limit(String limit, int max) {
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

    private static Long instant(String field, String text) {
        if (text == null || text.isEmpty()) {
            return null;
        }
        try {
            return Instant.parse(text).toEpochMilli();
        } catch (DateTimeParseException | ArithmeticException e) {
            throw new InvalidJobException(field, field + " must be an ISO-8601 instant (2026-11-30T12:00:00Z)");
        }
    }

    private static String blankToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    /** Errors of this resource as problem bodies (local: the service's own resources are left alone). */
    @ServerExceptionMapper
    public Response problem(RuntimeException e, UriInfo uri) {
        return ProblemMappers.problem(e, uri);
    }
}
