package io.delayq.api;

import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonRawValue;
import com.fasterxml.jackson.databind.JsonNode;

import io.delayq.api.JobsResource.Conflict;
import io.delayq.api.JobsResource.Enqueued;
import io.delayq.api.JobsResource.NotFound;
import io.delayq.core.InvalidJobException;
import io.delayq.schedule.Schedule;
import io.delayq.schedule.Schedule.Fields;
import io.delayq.schedule.Schedules;
import io.delayq.security.DelayqAccessPolicy;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.vertx.http.security.AuthorizationPolicy;
import io.quarkus.runtime.configuration.DurationConverter;

/** Recurring schedules: list, create or replace, delete, and run one now. */
@IfBuildProperty(name = "delayq.api.enabled", stringValue = "true", enableIfMissing = true)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
@Path("/schedules")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.WILDCARD)
public class SchedulesResource {
    private static final Set<String> FIELDS = Set.of("cron", "every", "topic", "payload", "timeZone", "misfire", "overlap", "start",
            "end");
    private final Schedules schedules;
    private final JobBodyParser parser;

    public SchedulesResource(Schedules schedules, JobBodyParser parser) {
        this.schedules = schedules;
        this.parser = parser;
    }

    /**
     * A schedule as the API shows it: {@code source} {@code config} (this replica's configuration)
     * or {@code api}; {@code lastTick} the latest tick fired or skipped (absent: none yet);
     * {@code nextTick} the next one (absent while paused, or past its end); {@code start} and
     * {@code end} absent when unbounded.
     */
    @RegisterForReflection
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record View(String name, String source, String cron, String every, String timeZone, String topic,
            @JsonRawValue String payload, String misfire, String overlap, String start, String end, boolean paused,
            String lastTick, String nextTick) {
    }

    private View view(Schedule s) {
        Schedules.Ticks t = schedules.ticks(s);
        Schedule.Steering b = s.steering();
        return new View(s.name(), s.source().json(), s.cron(), s.every() == null ? null : Schedule.format(s.every()),
                s.zone() == null ? null : s.zone().getId(), s.topic(), s.payloadJson(), s.misfire().json(), s.overlap().json(),
                b.start() == null ? null : b.start().toString(), b.end() == null ? null : b.end().toString(), s.paused(),
                t.last() == null ? null : t.last().toString(), t.next() == null || s.paused() ? null : t.next().toString());
    }

    /** What a backfill did. */
    @RegisterForReflection
    public record BackfillView(int enqueued, int skipped) {
    }

    @GET
    @Operation(summary = "Every recurring schedule this replica fires: its configuration's and those created over REST")
    public List<View> list() {
        schedules.reload();
        return schedules.all().stream().map(this::view).toList();
    }

    @GET
    @Path("/{name}")
    @Operation(summary = "One recurring schedule")
    public View get(@PathParam("name") String name) {
        return view(find(name));
    }

    @PUT
    @Path("/{name}")
    @Operation(summary = "Create or replace a recurring schedule", description = "Body: {\"cron\" (Quartz, with seconds)"
            + " | \"every\" (\"30s\", \"1h\"), \"topic\", \"payload\"?, \"timeZone\"? (cron only, default UTC), \"misfire\"?"
            + " (fire-once, the default, or skip), \"overlap\"? (allow, the default, or skip: no tick while the previous"
            + " tick's job is scheduled or running), \"start\"?, \"end\"? (instants that bound when it fires; end after"
            + " start)}. Each tick becomes one job of the topic, id <name>:<tick epoch ms>. A replaced schedule stays paused"
            + " if it was. 409 for a schedule of the configuration.")
    @RequestBody(description = "the schedule")
    @APIResponse(responseCode = "201", description = "created", content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = View.class)))
    @APIResponse(responseCode = "200", description = "replaced", content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = View.class)))
    public Response put(@PathParam("name") String name, String body) {
        Schedule s = parse(name, body);
        boolean created = schedules.put(s);
        View v = view(schedules.find(name).orElse(s)); // as stored: a paused schedule stays paused
        return created ? Response.created(URI.create("/schedules/" + name)).entity(v).build() : Response.ok(v).build();
    }

    @DELETE
    @Path("/{name}")
    @Operation(summary = "Delete a recurring schedule", description = "204 deleted (jobs of past ticks stay); 404 unknown; "
            + "409 for a schedule of the configuration")
    @APIResponse(responseCode = "204", description = "deleted")
    public Response delete(@PathParam("name") String name) {
        checkName(name);
        if (!schedules.delete(name)) {
            throw new NotFound("no schedule " + name);
        }
        return Response.noContent().build();
    }

    @POST
    @Path("/{name}/trigger")
    @Operation(summary = "Run a schedule now, once", description = "Enqueues one job of its topic with its payload, id "
            + "<name>:trigger:<now epoch ms>, due at once; its ticks go on as before.")
    @APIResponse(responseCode = "201", description = "the job", content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = Enqueued.class)))
    @APIResponse(responseCode = "200", description = "a job of that id existed (triggered twice in one millisecond)",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = Enqueued.class)))
    public Response trigger(@PathParam("name") String name) {
        checkName(name);
        var info = schedules.trigger(name).orElseThrow(() -> new NotFound("no schedule " + name));
        return info.created()
                ? Response.created(URI.create("/jobs/" + info.topic() + "/" + info.id())).entity(Enqueued.of(info)).build()
                : Response.ok(Enqueued.of(info)).build();
    }

    @POST
    @Path("/{name}/pause")
    @Operation(summary = "Pause a schedule made over REST", description = "It enqueues nothing, on any replica, until "
            + "resumed (the state is kept in Redis with it); a tick enqueued ahead is cancelled. Pausing a paused schedule "
            + "changes nothing. 404 unknown; 409 for a schedule of the configuration.")
    @APIResponse(responseCode = "200", description = "the schedule, paused", content = @Content(mediaType =
            MediaType.APPLICATION_JSON, schema = @Schema(implementation = View.class)))
    public View pause(@PathParam("name") String name) {
        return paused(name, true);
    }

    @POST
    @Path("/{name}/resume")
    @Operation(summary = "Resume a paused schedule", description = "Its ticks go on; those it missed while paused "
            + "follow its misfire rule (fire-once: the latest once, at once; skip: none). Resuming a running schedule "
            + "changes nothing. 404 unknown; 409 for a schedule of the configuration.")
    @APIResponse(responseCode = "200", description = "the schedule, running", content = @Content(mediaType =
            MediaType.APPLICATION_JSON, schema = @Schema(implementation = View.class)))
    public View resume(@PathParam("name") String name) {
        return paused(name, false);
    }

    private View paused(String name, boolean paused) {
        checkName(name);
        return view(schedules.setPaused(name, paused).orElseThrow(() -> new NotFound("no schedule " + name)));
    }

    @POST
    @Path("/{name}/backfill")
    @Operation(summary = "Enqueue the ticks of a past (or future) range now", description = "Body: {\"from\", \"to\"} "
            + "(instants, to not before from). One job per tick in the range, at most " + Schedules.MAX_BACKFILL
            + ", each with its tick's id <name>:<tick epoch ms>, due now; a tick whose job exists or ran within the "
            + "topic's dedup window is skipped, so repeating a backfill enqueues nothing new. Paused or not. 404 unknown.")
    @RequestBody(description = "the range")
    @APIResponse(responseCode = "200", description = "how many ticks were enqueued and skipped", content = @Content(
            mediaType = MediaType.APPLICATION_JSON, schema = @Schema(implementation = BackfillView.class)))
    public BackfillView backfill(@PathParam("name") String name, String body) {
        checkName(name);
        JsonNode node = parser.tree(body);
        if (node == null || !node.isObject()) {
            throw new InvalidJobException("body", "a backfill is a JSON object {\"from\", \"to\"}");
        }
        for (Iterator<String> names = node.fieldNames(); names.hasNext();) {
            String f = names.next();
            if (!f.equals("from") && !f.equals("to")) {
                throw new InvalidJobException(f, "unknown field " + f + "; known fields are [from, to]");
            }
        }
        Instant from = instant(node, "from", true);
        Instant to = instant(node, "to", true);
        Schedules.Backfill b = schedules.backfill(find(name), from, to);
        return new BackfillView(b.enqueued(), b.skipped());
    }

    private static final Instant LATEST = Instant.parse("9999-12-31T23:59:59Z");

    /** An instant field ({@code 2026-12-01T08:00:00Z}), null when absent and not required. */
    private static Instant instant(JsonNode node, String field, boolean required) {
        String text = JobBodyParser.text(node, field);
        if (text == null) {
            if (required) {
                throw new InvalidJobException(field, field + " is required (an instant such as 2026-12-01T08:00:00Z)");
            }
            return null;
        }
        Instant at;
        try {
            at = OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeParseException e) {
            throw new InvalidJobException(field, field + " must be an instant such as 2026-12-01T08:00:00Z, not " + text);
        }
        // Tick arithmetic is in epoch ms: keep far from where a long of ms overflows.
        if (at.isBefore(Instant.EPOCH) || at.isAfter(LATEST)) {
            throw new InvalidJobException(field, field + " must be between 1970-01-01T00:00:00Z and " + LATEST + ", not "
                    + text);
        }
        return at;
    }

    private Schedule find(String name) {
        checkName(name);
        return schedules.find(name).or(() -> {
            schedules.reload();
            return schedules.find(name);
        }).orElseThrow(() -> new NotFound("no schedule " + name));
    }

    private static void checkName(String name) {
        if (!Schedule.NAME.matcher(name).matches()) {
            throw new InvalidJobException("name", "name must match " + Schedule.NAME.pattern());
        }
    }

    private Schedule parse(String name, String body) {
        checkName(name);
        JsonNode node = parser.tree(body);
        if (node == null || !node.isObject()) {
            throw new InvalidJobException("body", "a schedule is a JSON object");
        }
        for (Iterator<String> names = node.fieldNames(); names.hasNext();) {
            String f = names.next();
            if (!FIELDS.contains(f)) {
                throw new InvalidJobException(f, "unknown field " + f + "; known fields are " + FIELDS);
            }
        }
        Duration every = null;
        String everyText = JobBodyParser.text(node, "every");
        if (everyText != null) {
            try {
                every = DurationConverter.parseDuration(everyText);
            } catch (RuntimeException e) {
                throw new InvalidJobException("every", "every must be a duration such as 30s, 15m, 1h or PT1H");
            }
            if (every == null) {
                throw new InvalidJobException("every", "every must be a duration such as 30s, 15m, 1h or PT1H");
            }
        }
        JsonNode p = node.get("payload");
        String payload = p == null || p.isNull() ? null : parser.rawPayload(body);
        schedules.checkPayload(payload, "payload");
        // since 0: Schedules.put sets the definition time (Redis time)
        return Schedule.of(name, JobBodyParser.text(node, "cron"), every, JobBodyParser.text(node, "topic"), payload,
                JobBodyParser.text(node, "timeZone"), JobBodyParser.text(node, "misfire"), Schedule.Source.API, 0,
                Fields.JSON).with(Schedule.Steering.of(JobBodyParser.text(node, "overlap"), instant(node, "start", false),
                        instant(node, "end", false), Fields.JSON));
    }

    /** Errors of this resource as problem bodies: a schedule of the configuration is a 409. */
    @ServerExceptionMapper
    public Response problem(RuntimeException e, UriInfo uri) {
        return ProblemMappers.problem(e instanceof Schedules.ConfiguredScheduleException c ? new Conflict(c.getMessage()) : e,
                uri);
    }
}
