package io.delayq.api;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

import org.eclipse.microprofile.config.ConfigProvider;
import org.eclipse.microprofile.openapi.OASFactory;
import org.eclipse.microprofile.openapi.OASFilter;
import org.eclipse.microprofile.openapi.models.Components;
import org.eclipse.microprofile.openapi.models.OpenAPI;
import org.eclipse.microprofile.openapi.models.Operation;
import org.eclipse.microprofile.openapi.models.PathItem;
import org.eclipse.microprofile.openapi.models.media.Schema;
import org.eclipse.microprofile.openapi.models.responses.APIResponse;
import org.eclipse.microprofile.openapi.models.responses.APIResponses;
import org.eclipse.microprofile.openapi.models.security.SecurityRequirement;
import org.eclipse.microprofile.openapi.models.security.SecurityScheme;

import io.delayq.security.AccessRules;
import io.delayq.security.DelayqRole;
import io.quarkus.smallrye.openapi.OpenApiFilter;

/**
 * What the OpenAPI document says about delayq's REST API beyond what the resources' annotations
 * give, so that a client generated from it is right: one meaningful operationId per operation
 * (a generator names its methods after them), the credentials the server accepts, applied per
 * operation with the role {@link AccessRules} requires, and the RFC 9457 problem body of every
 * error status an operation can answer. Kept here, in one table, rather than spread over the
 * resources' annotations: the roles come from the same table the access policy enforces, so the
 * document cannot drift from it.
 * <p>
 * Runs at start-up (an OIDC provider is runtime configuration). Only delayq's own paths are
 * touched: a service's own endpoints keep whatever its annotations say.
 */
@OpenApiFilter(stages = OpenApiFilter.RunStage.RUNTIME_STARTUP)
public class OpenApiContract implements OASFilter {
    static final String BASIC = "basicAuth";
    static final String BEARER = "bearerAuth";
    static final String OIDC = "oidc";
    static final String PROBLEM = "Problem";

    /** The roots of delayq's REST paths (relative to the REST root). */
    private static final Set<String> ROOTS = Set.of("jobs", "topics", "schedules", "history");

    /**
     * Every operation of the API: its id, and the 4xx it can answer beyond 401/403 (every
     * operation; refused by the access policy) — 400 a field breaking a rule (a malformed topic
     * in the path too), 404 unknown, 409 a state that forbids it, 413 over a size limit, 415 a
     * body that is not JSON. Every operation can also answer 503 (Redis away) and 500.
     * A new endpoint gets its line here; {@code OpenApiClientIT} fails until it has one,
     * and {@code OpenApiExactnessTest} until its answers are what the document says.
     */
    static final List<Op> OPERATIONS = List.of(
            new Op("POST", "/jobs", "enqueueJob", 400, 409, 413, 415),
            new Op("POST", "/jobs/batch", "enqueueBatch", 400, 409, 413, 415),
            new Op("GET", "/jobs/{topic}/{id}", "getJob", 400, 404),
            new Op("DELETE", "/jobs/{topic}/{id}", "cancelJob", 400, 404, 409),
            new Op("PATCH", "/jobs/{topic}/{id}", "rescheduleJob", 400, 404, 409, 415),
            new Op("GET", "/topics", "listTopics"),
            new Op("DELETE", "/topics/{topic}", "deleteTopic", 400, 404, 409),
            new Op("POST", "/topics/{topic}/pause", "pauseTopic", 400),
            new Op("POST", "/topics/{topic}/resume", "resumeTopic", 400),
            new Op("PUT", "/topics/{topic}/rate-limit", "setRateLimit", 400, 415),
            new Op("DELETE", "/topics/{topic}/rate-limit", "clearRateLimit", 400),
            new Op("PUT", "/topics/{topic}/max-in-flight", "setMaxInFlight", 400, 415),
            new Op("DELETE", "/topics/{topic}/max-in-flight", "clearMaxInFlight", 400),
            new Op("PUT", "/topics/{topic}/group-rate-limit", "setGroupRateLimit", 400, 415),
            new Op("DELETE", "/topics/{topic}/group-rate-limit", "clearGroupRateLimit", 400),
            new Op("GET", "/topics/{topic}/jobs", "listJobs", 400),
            new Op("POST", "/topics/{topic}/jobs/cancel", "cancelJobs", 400, 415),
            new Op("POST", "/topics/{topic}/jobs/reschedule", "rescheduleJobs", 400, 415),
            new Op("GET", "/topics/{topic}/dead", "listDeadJobs", 400),
            new Op("POST", "/topics/{topic}/dead/requeue", "requeueDeadJobs", 400, 415),
            new Op("POST", "/topics/{topic}/dead/purge", "purgeDeadJobs", 400, 415),
            new Op("POST", "/topics/{topic}/dead/{id}/requeue", "requeueDeadJob", 400, 404),
            new Op("DELETE", "/topics/{topic}/dead/{id}", "purgeDeadJob", 400, 404),
            new Op("GET", "/topics/{topic}/history", "getTopicHistory", 400),
            new Op("GET", "/history", "getHistory", 400),
            new Op("GET", "/schedules", "listSchedules"),
            new Op("GET", "/schedules/{name}", "getSchedule", 400, 404),
            new Op("PUT", "/schedules/{name}", "putSchedule", 400, 409, 413, 415),
            new Op("DELETE", "/schedules/{name}", "deleteSchedule", 400, 404, 409),
            new Op("POST", "/schedules/{name}/trigger", "triggerSchedule", 400, 404),
            new Op("POST", "/schedules/{name}/pause", "pauseSchedule", 400, 404, 409),
            new Op("POST", "/schedules/{name}/resume", "resumeSchedule", 400, 404, 409),
            new Op("POST", "/schedules/{name}/backfill", "backfillSchedule", 400, 404, 415));

    /** An operation of the API by method and path template, its operationId and its own error statuses. */
    record Op(String method, String path, String operationId, int... statuses) {
    }

    /** The JSON body of an operation: a schema of {@link #bodySchemas}, and whether it may be left out. */
    record Body(String schema, boolean required) {
    }

    private static final Map<String, Body> BODIES = Map.ofEntries(
            Map.entry("enqueueJob", new Body("NewJob", true)),
            Map.entry("enqueueBatch", new Body("NewJobs", true)),
            Map.entry("rescheduleJob", new Body("Reschedule", true)),
            Map.entry("setRateLimit", new Body("RateLimitBody", true)),
            Map.entry("setGroupRateLimit", new Body("RateLimitBody", true)),
            Map.entry("setMaxInFlight", new Body("MaxInFlightBody", true)),
            Map.entry("putSchedule", new Body("ScheduleBody", true)),
            Map.entry("backfillSchedule", new Body("BackfillBody", true)),
            Map.entry("requeueDeadJobs", new Body("DeadFilter", false)),
            Map.entry("purgeDeadJobs", new Body("DeadFilter", false)),
            Map.entry("cancelJobs", new Body("JobFilter", false)),
            Map.entry("rescheduleJobs", new Body("JobMove", true)));

    /**
     * Properties written as raw JSON ({@code @JsonRawValue}): any JSON value, where the annotations'
     * scan sees a Java String and says {@code type: string}.
     */
    private static final Map<String, List<String>> RAW_JSON = Map.of("View", List.of("payload"), "JobInfo",
            List.of("result"), "ListedJob", List.of("payload", "result"));

    private static final Map<Integer, String> REASONS = Map.of(
            400, "A field breaks a rule; the problem's `field` names it",
            401, "No valid credential (once any credential is configured)",
            403, "The credential lacks the role this operation needs, or the request came from another site or named a Host"
                    + " that is not in delayq.http.allowed-hosts",
            404, "Not found",
            408, "The request body did not arrive within delayq.http.read-timeout of its headers (the connection is closed)",
            409, "The job or schedule is in a state that does not allow this",
            413, "Over a size limit (payload bytes, jobs per batch)",
            415, "The request body is not application/json",
            500, "Unexpected error (logged by the server)",
            503, "Redis is unavailable (or refuses delayq's credentials), or the server reads as many request bodies as"
                    + " its memory allows; retry after the Retry-After seconds");

    @Override
    public void filterOpenAPI(OpenAPI openAPI) {
        if (openAPI.getPaths() == null || openAPI.getPaths().getPathItems() == null) {
            return;
        }
        Optional<String> oidc = ConfigProvider.getConfig().getOptionalValue("quarkus.oidc.auth-server-url", String.class);
        // The document's paths start with the HTTP root path and the REST path, as requests do.
        String restRoot = ConfigProvider.getConfig().getOptionalValue("quarkus.http.root-path", String.class).orElse("/")
                + "/" + ConfigProvider.getConfig().getOptionalValue("quarkus.rest.path", String.class).orElse("/");
        boolean touched = false;
        Set<String> bodies = new TreeSet<>();
        for (Map.Entry<String, PathItem> e : openAPI.getPaths().getPathItems().entrySet()) {
            String path = relative(e.getKey(), restRoot);
            if (!isDelayqPath(path) || e.getValue().getOperations() == null) {
                continue;
            }
            for (Map.Entry<PathItem.HttpMethod, Operation> o : e.getValue().getOperations().entrySet()) {
                describe(o.getKey().name(), path, o.getValue(), oidc.isPresent()).ifPresent(bodies::add);
                touched = true;
            }
        }
        if (touched) {
            components(openAPI, oidc, bodies);
        }
    }

    /**
     * A document path relative to the REST root ({@code quarkus.http.root-path} then
     * {@code quarkus.rest.path}, which the document's paths include), as the table and the access
     * rules name it.
     */
    static String relative(String path, String restRoot) {
        String root = "/" + restRoot.replaceAll("/{2,}", "/").replaceAll("^/+|/+$", "");
        if (root.length() > 1 && (path.equals(root) || path.startsWith(root + "/"))) {
            String rest = path.substring(root.length());
            return rest.isEmpty() ? "/" : rest;
        }
        return path;
    }

    /** Whether a path (relative to the REST root) is under one of the API's roots. */
    public static boolean isDelayqPath(String path) {
        String root = path.replaceAll("^/+", "").split("/", 2)[0];
        return ROOTS.contains(root);
    }

    /** The table's line for an operation, if it has one. */
    static Optional<Op> find(String method, String path) {
        return OPERATIONS.stream().filter(op -> op.method().equalsIgnoreCase(method) && op.path().equals(path))
                .findFirst();
    }

    /** Completes one operation; returns the name of the body schema it refers to, if any. */
    private static Optional<String> describe(String method, String path, Operation op, boolean oidc) {
        Optional<Op> known = find(method, path);
        known.ifPresent(k -> op.setOperationId(k.operationId()));
        // The resources read their bodies as text (to name the field at fault themselves): the
        // document says what JSON they expect instead of "any string".
        known.map(k -> BODIES.get(k.operationId())).ifPresent(body -> op.setRequestBody(
                OASFactory.createRequestBody().required(body.required())
                        .description(op.getRequestBody() != null && op.getRequestBody().getDescription() != null
                                ? op.getRequestBody().getDescription() : body.schema())
                        .content(OASFactory.createContent().addMediaType("application/json",
                                OASFactory.createMediaType().schema(OASFactory.createSchema().ref(body.schema()))))));

        // The role as AccessRules decides it for a request on this path ({x} stands for any segment).
        DelayqRole role = AccessRules.required(method, path.replaceAll("\\{[^}]+}", "x"));
        List<String> accepted = new ArrayList<>();
        for (DelayqRole r : DelayqRole.values()) {
            if (r.includes(role)) {
                accepted.add(r.roleName());
            }
        }
        String rule = "Needs role `" + role.roleName() + "` (" + String.join(", ", accepted.stream()
                .map(n -> "`" + n + "`").toList()) + " may call it) once any credential is configured; "
                + "without one the API is open.";
        String description = op.getDescription();
        if (description == null || !description.contains(rule)) {
            op.setDescription(description == null || description.isBlank() ? rule : description + "\n\n" + rule);
        }
        List<SecurityRequirement> security = new ArrayList<>();
        // OpenAPI 3.1 lets a requirement of a non-OAuth scheme list the roles it needs.
        security.add(OASFactory.createSecurityRequirement().addScheme(BASIC, accepted));
        security.add(OASFactory.createSecurityRequirement().addScheme(BEARER, accepted));
        if (oidc) {
            security.add(OASFactory.createSecurityRequirement().addScheme(OIDC, accepted));
        }
        op.setSecurity(security);

        Set<Integer> statuses = new TreeSet<>(List.of(401, 403, 500, 503));
        known.ifPresent(k -> {
            for (int s : k.statuses()) {
                statuses.add(s);
            }
            // RequestDeadline answers any request whose body is late, before a resource sees it.
            if (BODIES.containsKey(k.operationId())) {
                statuses.add(408);
            }
        });
        APIResponses responses = op.getResponses() != null ? op.getResponses() : OASFactory.createAPIResponses();
        for (int status : statuses) {
            String code = Integer.toString(status);
            APIResponse r = responses.getAPIResponse(code);
            if (r == null) {
                r = OASFactory.createAPIResponse().description(REASONS.get(status));
                responses.addAPIResponse(code, r);
            }
            // The problem body replaces whatever a resource annotation guessed for an error.
            r.setContent(OASFactory.createContent().addMediaType(Problem.MEDIA_TYPE,
                    OASFactory.createMediaType().schema(OASFactory.createSchema().ref(PROBLEM))));
            if (status == 503 && (r.getHeaders() == null || !r.getHeaders().containsKey("Retry-After"))) {
                r.addHeader("Retry-After", OASFactory.createHeader().description("Seconds to wait before retrying")
                        .schema(OASFactory.createSchema().addType(Schema.SchemaType.INTEGER)));
            }
        }
        op.setResponses(responses);
        return known.map(k -> BODIES.get(k.operationId())).map(Body::schema);
    }

    private static void components(OpenAPI openAPI, Optional<String> oidc, Set<String> bodies) {
        if (openAPI.getComponents() == null) {
            openAPI.setComponents(OASFactory.createComponents());
        }
        Components c = openAPI.getComponents();
        if (c.getSecuritySchemes() == null || !c.getSecuritySchemes().containsKey(BASIC)) {
            c.addSecurityScheme(BASIC, OASFactory.createSecurityScheme().type(SecurityScheme.Type.HTTP).scheme("basic")
                    .description("A user of the configuration (quarkus.security.users.embedded.*) and its roles"));
        }
        if (c.getSecuritySchemes() == null || !c.getSecuritySchemes().containsKey(BEARER)) {
            c.addSecurityScheme(BEARER, OASFactory.createSecurityScheme().type(SecurityScheme.Type.HTTP)
                    .scheme("bearer").description("delayq.api.token (an operator credential), or an access token "
                            + "of the OIDC provider when one is configured"));
        }
        oidc.ifPresent(url -> c.addSecurityScheme(OIDC, OASFactory.createSecurityScheme()
                .type(SecurityScheme.Type.OPENIDCONNECT)
                .openIdConnectUrl(url.replaceAll("/+$", "") + "/.well-known/openid-configuration")
                .description("The OIDC provider of quarkus.oidc.auth-server-url; roles from the token's claims")));
        if (bodies.contains("NewJobs")) {
            bodies.add("NewJob");
        }
        bodySchemas().forEach((name, schema) -> {
            // Only those an operation refers to: an unused schema would only puzzle a generator.
            if (bodies.contains(name) && (c.getSchemas() == null || !c.getSchemas().containsKey(name))) {
                c.addSchema(name, schema);
            }
        });
        RAW_JSON.forEach((schema, properties) -> {
            Schema s = c.getSchemas() == null ? null : c.getSchemas().get(schema);
            if (s != null && s.getProperties() != null) {
                for (String p : properties) {
                    if (s.getProperties().containsKey(p)) {
                        s.addProperty(p, OASFactory.createSchema().description("Any JSON value"));
                    }
                }
            }
        });
        if (c.getSchemas() == null || !c.getSchemas().containsKey(PROBLEM)) {
            c.addSchema(PROBLEM, OASFactory.createSchema().addType(Schema.SchemaType.OBJECT)
                    .description("An RFC 9457 problem body")
                    .addRequired("status").addRequired("title")
                    .addProperty("type", OASFactory.createSchema().addType(Schema.SchemaType.STRING)
                            .description("Always about:blank"))
                    .addProperty("title", OASFactory.createSchema().addType(Schema.SchemaType.STRING)
                            .description("The HTTP reason phrase"))
                    .addProperty("status", OASFactory.createSchema().addType(Schema.SchemaType.INTEGER)
                            .description("The HTTP status"))
                    .addProperty("detail", OASFactory.createSchema().addType(Schema.SchemaType.STRING)
                            .description("What went wrong, naming the rule broken"))
                    .addProperty("instance", OASFactory.createSchema().addType(Schema.SchemaType.STRING)
                            .description("The request path"))
                    .addProperty("field", OASFactory.createSchema().addType(Schema.SchemaType.STRING)
                            .description("The request field that broke a rule, as a JSON path (jobs[3].delayMs)")));
        }
    }

    private static Schema type(Schema.SchemaType type, String description) {
        return OASFactory.createSchema().addType(type).description(description);
    }

    /** The request bodies, as JobBodyParser, TopicsResource and SchedulesResource read them. */
    static Map<String, Schema> bodySchemas() {
        Schema newJob = OASFactory.createSchema().addType(Schema.SchemaType.OBJECT)
                .description("A job to enqueue; at most one of delayMs and runAt (neither: due now)")
                .addRequired("topic")
                .addProperty("topic", type(Schema.SchemaType.STRING, "The topic: letters, digits, '.', '_', '-'"))
                .addProperty("id", type(Schema.SchemaType.STRING,
                        "The job's id, unique in its topic (enqueue is idempotent by id); generated when absent"))
                .addProperty("payload", OASFactory.createSchema().description("Any JSON value, handed to the observer"))
                .addProperty("delayMs", type(Schema.SchemaType.INTEGER, "Due this many ms from now").format("int64")
                        .minimum(java.math.BigDecimal.ZERO))
                .addProperty("runAt", type(Schema.SchemaType.STRING, "Due at this instant (ISO-8601)").format("date-time"))
                .addProperty("maxAttempts", type(Schema.SchemaType.INTEGER, "Attempts before the job goes to the dead set")
                        .format("int32").minimum(java.math.BigDecimal.ONE))
                .addProperty("retry", OASFactory.createSchema().addType(Schema.SchemaType.OBJECT)
                        .description("The job's own retry backoff, in place of its topic's delayq.topics.<t>.retry.initial"
                                + " and .retry.max (multiplier and jitter stay the topic's); either may be left out (the"
                                + " topic's, moved to meet the job's value). Kept with the job: through retries,"
                                + " reschedules and a requeue from the dead set")
                        .additionalPropertiesBoolean(false)
                        .addProperty("initialMs", type(Schema.SchemaType.INTEGER, "Delay before the second attempt, ms;"
                                + " at most maxMs and the horizon").format("int64").minimum(java.math.BigDecimal.ONE))
                        .addProperty("maxMs", type(Schema.SchemaType.INTEGER, "Most delay between two attempts, ms;"
                                + " at most the horizon").format("int64").minimum(java.math.BigDecimal.ONE)))
                .addProperty("ifExists", type(Schema.SchemaType.STRING, "What an existing id does: keep (default) answers"
                        + " the job as it is; replace gives a scheduled job this payload, runAt, maxAttempts and retry"
                        + " (replaced: true); extend does the same but never moves runAt earlier. A job in flight is not changed"
                        + " (409, in a batch the item's status); a dead id, or one within the dedup window, is enqueued anew")
                        .enumeration(List.of("keep", "replace", "extend")))
                .addProperty("group", type(Schema.SchemaType.STRING, "The job's group (same pattern as an id): with the"
                        + " topic's delayq.topics.<t>.group-max-in-flight=M at most M jobs of one group run at once over all"
                        + " replicas, in runAt order; a group at its limit holds back its own jobs only (GET shows them with"
                        + " held: true). The group picks the job's partition: give a job the same group each time (an id is one job per"
                        + " topic: an id that is a job with another group, or none, is refused with 409 naming group)"))
                .addProperty("timeoutMs", type(Schema.SchemaType.INTEGER, "The job's own attempt timeout, ms, in place of"
                        + " its topic's attempt timeout and, for an HTTP target, http.timeout; a retry after a timeout waits"
                        + " at most min(timeoutMs, 10 min)").format("int64").minimum(java.math.BigDecimal.ONE)
                        .maximum(java.math.BigDecimal.valueOf(86_400_000L)))
                .addProperty("expiresAt", type(Schema.SchemaType.STRING, "After runAt: a job not started by then is never"
                        + " started, and a retry, snooze, rerun, reschedule or extend that would make it due after it sends"
                        + " it to the dead set instead (lastError \"expired: ...\"); a requeue from the dead set clears it")
                        .format("date-time"))
                .addProperty("priority", type(Schema.SchemaType.INTEGER, "1 (first) .. 5 (last), default 3: of the jobs"
                        + " due in a partition a higher priority is always taken first (each partition serves its own),"
                        + " never before its runAt; kept through retries, snoozes, requeues and reclaims. replace or extend"
                        + " without a priority keeps the stored one").format("int32").minimum(java.math.BigDecimal.ONE)
                        .maximum(java.math.BigDecimal.valueOf(5)));
        Schema jobs = OASFactory.createSchema().addType(Schema.SchemaType.ARRAY).maxItems(1000)
                .items(OASFactory.createSchema().ref("NewJob"));
        return Map.of(
                "NewJob", newJob,
                "NewJobs", OASFactory.createSchema().description("Up to 1000 jobs: an array, or {\"jobs\": [...]}")
                        .addOneOf(jobs)
                        .addOneOf(OASFactory.createSchema().addType(Schema.SchemaType.OBJECT).addRequired("jobs")
                                .addProperty("jobs", OASFactory.createSchema().addType(Schema.SchemaType.ARRAY)
                                        .maxItems(1000).items(OASFactory.createSchema().ref("NewJob")))),
                "Reschedule", OASFactory.createSchema().addType(Schema.SchemaType.OBJECT)
                        .description("Exactly one of delayMs and runAt")
                        .addProperty("delayMs", type(Schema.SchemaType.INTEGER, "Due this many ms from now").format("int64"))
                        .addProperty("runAt", type(Schema.SchemaType.STRING, "Due at this instant (ISO-8601)")
                                .format("date-time")),
                "RateLimitBody", OASFactory.createSchema().addType(Schema.SchemaType.OBJECT).addRequired("perSecond")
                        .addProperty("perSecond", type(Schema.SchemaType.NUMBER,
                                "Jobs per second over all replicas (of each group, for a group rate limit)").exclusiveMinimum(java.math.BigDecimal.ZERO)),
                "MaxInFlightBody", OASFactory.createSchema().addType(Schema.SchemaType.OBJECT).addRequired("max")
                        .addProperty("max", type(Schema.SchemaType.INTEGER, "Jobs of the topic in flight at once over all"
                                + " replicas; at least delayq.partitions").minimum(java.math.BigDecimal.ONE).format("int32")),
                "ScheduleBody", OASFactory.createSchema().addType(Schema.SchemaType.OBJECT)
                        .description("A recurring schedule: exactly one of cron and every").addRequired("topic")
                        .addProperty("cron", type(Schema.SchemaType.STRING, "Quartz cron, with seconds"))
                        .addProperty("every", type(Schema.SchemaType.STRING, "A duration: 30s, 15m, 1h or PT1H"))
                        .addProperty("topic", type(Schema.SchemaType.STRING, "The topic each tick's job goes to"))
                        .addProperty("payload", OASFactory.createSchema().description("Any JSON value, the payload of each job"))
                        .addProperty("timeZone", type(Schema.SchemaType.STRING, "For cron only; default UTC"))
                        .addProperty("misfire", type(Schema.SchemaType.STRING, "What a missed tick does; default fire-once")
                                .enumeration(List.of("fire-once", "skip")))
                        .addProperty("overlap", type(Schema.SchemaType.STRING, "allow (the default): every tick fires; "
                                + "skip: a tick is skipped while the previous tick's job is scheduled or running")
                                .enumeration(List.of("allow", "skip")))
                        .addProperty("start", type(Schema.SchemaType.STRING, "No tick before this instant").format("date-time"))
                        .addProperty("end", type(Schema.SchemaType.STRING, "No tick after this instant; after start")
                                .format("date-time")),
                "BackfillBody", OASFactory.createSchema().addType(Schema.SchemaType.OBJECT)
                        .description("The ticks to enqueue now: those from from to to, both included, at most "
                                + io.delayq.schedule.Schedules.MAX_BACKFILL).addRequired("from").addRequired("to")
                        .addProperty("from", type(Schema.SchemaType.STRING, "The first instant of the range").format("date-time"))
                        .addProperty("to", type(Schema.SchemaType.STRING, "The last instant of the range; not before from")
                                .format("date-time")),
                "DeadFilter", OASFactory.createSchema().addType(Schema.SchemaType.OBJECT)
                        .description("Which dead jobs; an empty body means all of them")
                        .addProperty("idPrefix", type(Schema.SchemaType.STRING, "Jobs whose id starts with this"))
                        .addProperty("error", type(Schema.SchemaType.STRING, "Jobs whose lastError contains this (ASCII letters compared without case)")),
                "JobFilter", jobFilter(OASFactory.createSchema().description("Which scheduled jobs, all of these holding; "
                        + "an empty body means all of them")),
                "JobMove", jobFilter(OASFactory.createSchema().description("Which scheduled jobs (as JobFilter) and "
                        + "their new time: exactly one of delayMs and runAt"))
                        .addProperty("delayMs", type(Schema.SchemaType.INTEGER, "Due this many ms from the call").format("int64")
                                .minimum(java.math.BigDecimal.ZERO))
                        .addProperty("runAt", type(Schema.SchemaType.STRING, "Due at this instant").format("date-time")));
    }

    private static Schema jobFilter(Schema s) {
        return s.addType(Schema.SchemaType.OBJECT)
                .addProperty("idPrefix", type(Schema.SchemaType.STRING, "Jobs whose id starts with this"))
                .addProperty("group", type(Schema.SchemaType.STRING, "Jobs of this group"))
                .addProperty("from", type(Schema.SchemaType.STRING, "Jobs whose runAt is at or after this").format("date-time"))
                .addProperty("to", type(Schema.SchemaType.STRING, "Jobs whose runAt is at or before this").format("date-time"));
    }
}
