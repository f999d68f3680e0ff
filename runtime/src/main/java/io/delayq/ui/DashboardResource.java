package io.delayq.ui;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.SecurityContext;
import jakarta.ws.rs.core.UriInfo;

import org.eclipse.microprofile.openapi.annotations.Operation;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.JobInfo;
import io.delayq.core.JobValidator;
import io.delayq.core.Jobs;
import io.delayq.core.TopicControl;
import io.delayq.core.TopicFlow;
import io.delayq.ops.ReplicaRegistry;
import io.delayq.schedule.Schedule;
import io.delayq.schedule.Schedules;
import io.delayq.security.AccessMode;
import io.delayq.security.DelayqAccessPolicy;
import io.delayq.security.DelayqRole;
import io.delayq.store.DeadCallbackStore;
import io.delayq.store.DeadJob;
import io.delayq.store.Inspection;
import io.delayq.store.JobRecord;
import io.delayq.store.StoreUnavailableException;
import io.delayq.store.TopicSnapshot;
import io.delayq.store.TopicStats;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.vertx.http.security.AuthorizationPolicy;

/**
 * The operators' dashboard, server-rendered: {@code /delayq} (every topic, refreshed every few
 * seconds), {@code /delayq/topics/{topic}} (its next 24 hours, next due, in flight, dead, with
 * actions) and {@code /delayq/job?topic=&id=}. Actions are POSTs sent by htmx with the header
 * {@value #UI_HEADER}: a page of another site can make a browser send a form, not a custom
 * header (that needs a CORS preflight this service does not grant), so a cross-site request
 * cannot act.
 */
@IfBuildProperty(name = "delayq.ui.enabled", stringValue = "true", enableIfMissing = true)
@Path("/delayq")
@Produces(MediaType.TEXT_HTML)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
public class DashboardResource {
    static final String UI_HEADER = "X-Delayq-UI";
    private static final int BUCKETS = 24;
    private static final long HOUR_MS = 3_600_000L;
    private static final int LIST = 20;
    private static final int DEAD_LIST = 50;
    private static final int MAX_TOPICS = 200;
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss").withZone(ZoneOffset.UTC);
    private static final DateTimeFormatter HOUR = DateTimeFormatter.ofPattern("HH:mm").withZone(ZoneOffset.UTC);

    private final Inspection store;
    private final DeadCallbackStore callbacks;
    private final Jobs jobs;
    private final Schedules schedules;
    private final ReplicaRegistry replicas;
    private final TopicControl control;
    private final Pages pages;
    private final AccessMode access;
    private final SecurityIdentity identity;
    /** The HTTP root path (static files such as the htmx WebJar are under it, not under quarkus.rest.path). */
    private final String assets;
    private final ObjectMapper mapper;

    public DashboardResource(Inspection store, DeadCallbackStore callbacks, Jobs jobs, Schedules schedules,
            ReplicaRegistry replicas, TopicControl control, Pages pages, ObjectMapper mapper, AccessMode access,
            SecurityIdentity identity) {
        this.access = access;
        this.identity = identity;
        String httpRoot = org.eclipse.microprofile.config.ConfigProvider.getConfig()
                .getOptionalValue("quarkus.http.root-path", String.class).orElse("/");
        this.assets = httpRoot.endsWith("/") ? httpRoot : httpRoot + "/";
        this.store = store;
        this.callbacks = callbacks;
        this.jobs = jobs;
        this.schedules = schedules;
        this.replicas = replicas;
        this.control = control;
        this.pages = pages;
        this.mapper = mapper;
    }

    // ---------------------------------------------------------------- pages

    @GET
    @Operation(hidden = true)
    public String overview(@Context UriInfo uri, @Context SecurityContext security) {
        return pages.render("overview", overview(page(uri, security)));
    }

    /** The overview's topic table alone: what the page re-reads every few seconds. */
    @GET
    @Path("/fragments/topics")
    @Operation(hidden = true)
    public String topicsFragment(@Context UriInfo uri, @Context SecurityContext security) {
        return pages.render("topics", overview(page(uri, security)));
    }

    @GET
    @Path("/topics/{topic}")
    @Operation(hidden = true)
    public String topic(@PathParam("topic") String topic, @Context UriInfo uri, @Context SecurityContext security) {
        JobValidator.checkTopic("topic", topic);
        return pages.render("topic", topic(page(uri, security), topic, null));
    }

    @GET
    @Path("/topics/{topic}/fragment")
    @Operation(hidden = true)
    public String topicFragment(@PathParam("topic") String topic, @Context UriInfo uri,
            @Context SecurityContext security) {
        JobValidator.checkTopic("topic", topic);
        return pages.render("topic-body", topic(page(uri, security), topic, null));
    }

    @GET
    @Path("/job")
    @Operation(hidden = true)
    public Response job(@QueryParam("topic") String topic, @QueryParam("id") String id, @Context UriInfo uri,
            @Context SecurityContext security) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        Views.Page page = page(uri, security);
        Optional<Inspection.JobDetail> found = store.lookup(topic, id);
        if (found.isEmpty()) {
            return Response.status(404).entity(pages.render("job",
                    new Views.Job(page, topic, id, false, null, 0, null, 0, null, null, null, null))).build();
        }
        JobInfo j = found.get().info();
        return Response.ok(pages.render("job", new Views.Job(page, topic, id, true, j.state().json(), j.attempts(),
                j.maxAttempts() == null ? "topic default" : j.maxAttempts().toString(),
                j.lostAttempts() == null ? 0 : j.lostAttempts(), time(j.runAt()),
                time(j.finishedAt()), j.lastError(), pretty(found.get().payload())))).build();
    }

    // ---------------------------------------------------------------- actions

    @POST
    @Path("/topics/{topic}/dead/{id}/requeue")
    @Operation(hidden = true)
    public Response requeue(@PathParam("topic") String topic, @PathParam("id") String id, @Context UriInfo uri,
            @Context SecurityContext security, @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, true, () -> store.revive(topic, id)
                .map(at -> "requeued " + id + ": due now")
                .orElse("no dead job " + id));
    }

    @POST
    @Path("/topics/{topic}/dead/{id}/purge")
    @Operation(hidden = true)
    public Response purge(@PathParam("topic") String topic, @PathParam("id") String id, @Context UriInfo uri,
            @Context SecurityContext security, @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, true,
                () -> store.purge(topic, id) ? "purged " + id : "no dead job " + id);
    }

    @POST
    @Path("/topics/{topic}/dead/requeue-all")
    @Operation(hidden = true)
    public Response requeueAll(@PathParam("topic") String topic, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, true, () -> {
            int n = eachDead(topic, id -> store.revive(topic, id).isPresent());
            return "requeued " + n + " dead job(s): due now (those that died after the click are left)";
        });
    }

    @POST
    @Path("/topics/{topic}/dead/purge-all")
    @Operation(hidden = true)
    public Response purgeAll(@PathParam("topic") String topic, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, true, () -> "purged " + eachDead(topic, id -> store.purge(topic, id))
                + " dead job(s)");
    }

    @POST
    @Path("/topics/{topic}/jobs/{id}/cancel")
    @Operation(hidden = true)
    public Response cancel(@PathParam("topic") String topic, @PathParam("id") String id, @Context UriInfo uri,
            @Context SecurityContext security, @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, false, () -> switch (jobs.cancel(topic, id)) {
            case CANCELLED -> "cancelled " + id;
            case INFLIGHT -> id + " is running: not cancelled";
            case DEAD -> id + " is dead: purge it instead";
            case UNKNOWN -> "no scheduled job " + id;
        });
    }

    @POST
    @Path("/topics/{topic}/jobs/{id}/run-now")
    @Operation(hidden = true)
    public Response runNow(@PathParam("topic") String topic, @PathParam("id") String id, @Context UriInfo uri,
            @Context SecurityContext security, @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, false, () -> switch (jobs.runNow(topic, id).outcome()) {
            case RESCHEDULED -> id + " is due now";
            case INFLIGHT -> id + " is already running";
            case DEAD -> id + " is dead: requeue it instead";
            case UNKNOWN -> "no scheduled job " + id;
        });
    }

    @POST
    @Path("/topics/{topic}/pause")
    @Operation(hidden = true)
    public Response pause(@PathParam("topic") String topic, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, true, () -> {
            control.pause(topic);
            return "paused " + topic + ": no replica takes its jobs until it is resumed";
        });
    }

    @POST
    @Path("/topics/{topic}/resume")
    @Operation(hidden = true)
    public Response resume(@PathParam("topic") String topic, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, true, () -> {
            control.resume(topic);
            return "resumed " + topic + ": its due jobs are taken now";
        });
    }

    @POST
    @Path("/topics/{topic}/max-in-flight")
    @Operation(hidden = true)
    @jakarta.ws.rs.Consumes(MediaType.APPLICATION_FORM_URLENCODED)
    public Response setMaxInFlight(@PathParam("topic") String topic, @jakarta.ws.rs.FormParam("max") String max,
            @Context UriInfo uri, @Context SecurityContext security, @HeaderParam(UI_HEADER) String ui,
            @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, true, () -> {
            int n;
            try {
                n = Integer.parseInt(max == null ? "" : max.trim());
            } catch (NumberFormatException e) {
                return "max in flight: a whole number of jobs, not '" + max + "'";
            }
            try {
                control.setMaxInFlight(topic, n);
            } catch (io.delayq.core.InvalidJobException e) {
                return "max in flight: " + e.getMessage();
            }
            return "capped " + topic + " at " + n + " job(s) in flight over all replicas";
        });
    }

    @POST
    @Path("/topics/{topic}/max-in-flight/clear")
    @Operation(hidden = true)
    public Response clearMaxInFlight(@PathParam("topic") String topic, @Context UriInfo uri,
            @Context SecurityContext security, @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, true, () -> {
            TopicFlow f = control.clearMaxInFlight(topic);
            return "cleared the max in flight set for " + topic + (f.maxInFlight() == null ? ": no cap"
                    : ": the configuration's " + f.maxInFlight().max() + " applies");
        });
    }

    @POST
    @Path("/schedules/{name}/trigger")
    @Operation(hidden = true)
    public Response trigger(@PathParam("name") String name, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        Response refused = refuse(security, ui, site, true);
        if (refused != null) {
            return refused;
        }
        Views.Page page = page(uri, security);
        Views.Overview o = overview(page);
        String msg = schedules.trigger(name).map(j -> "triggered " + name + ": job " + j.id()).orElse("no schedule " + name);
        return Response.ok(pages.render("topics", new Views.Overview(page, o.topics(), o.replicas(), o.schedules(),
                o.at() + " — " + msg))).build();
    }

    /** Runs an action for the topic page and answers its refreshed body with what happened. */
    private Response act(String topic, UriInfo uri, SecurityContext security, String ui, String site, boolean operator,
            java.util.function.Supplier<String> action) {
        JobValidator.checkTopic("topic", topic);
        Response refused = refuse(security, ui, site, operator);
        if (refused != null) {
            return refused;
        }
        String message = action.get();
        return Response.ok(pages.render("topic-body", topic(page(uri, security), topic, message))).build();
    }

    /**
     * 403 for a request a browser may have sent on another site's behalf (no {@value #UI_HEADER}
     * header, or {@code Sec-Fetch-Site: cross-site}), or by a user without the role.
     */
    private Response refuse(SecurityContext security, String ui, String site, boolean operator) {
        if (!"1".equals(ui) || "cross-site".equals(site)) {
            return Response.status(403).type(MediaType.TEXT_PLAIN)
                    .entity("dashboard actions are sent by the dashboard itself (header " + UI_HEADER + ")").build();
        }
        Views.Page p = page(null, security);
        if (operator ? !p.operator() : !p.producer()) {
            return Response.status(403).type(MediaType.TEXT_PLAIN)
                    .entity("this action needs the role " + (operator ? "delayq-operator" : "delayq-producer")).build();
        }
        return null;
    }

    /**
     * Applies {@code action} to the topic's jobs that were dead when it was asked, oldest first,
     * 500 at a time: a requeued job that fails for good again dies after that instant and is not
     * taken twice (nor is the request endless).
     */
    private int eachDead(String topic, java.util.function.Predicate<String> action) {
        long asked = store.redisTimeMs();
        int done = 0;
        for (int round = 0; round < 1000; round++) {
            List<String> ids = store.deadIdsUpTo(topic, asked, 500);
            int before = done;
            for (String id : ids) {
                done += action.test(id) ? 1 : 0;
            }
            if (ids.isEmpty() || done == before) {
                break;
            }
        }
        return done;
    }

    // ---------------------------------------------------------------- views

    /** Where the pages are, and what the viewer may do. */
    private Views.Page page(UriInfo uri, SecurityContext security) {
        String root = uri == null ? "/" : uri.getBaseUri().getPath();
        if (!root.endsWith("/")) {
            root = root + "/";
        }
        // The roles as delayq's access policy reads them (each includes those below it; mapped
        // roles count); with nothing configured the API is open, and so are the buttons.
        Optional<DelayqRole> role = access.open() ? Optional.of(DelayqRole.OPERATOR) : DelayqRole.of(identity);
        return new Views.Page(root, assets, role.map(r -> r.includes(DelayqRole.PRODUCER)).orElse(false),
                role.map(r -> r.includes(DelayqRole.OPERATOR)).orElse(false));
    }

    private Views.Overview overview(Views.Page page) {
        Map<String, ReplicaRegistry.Replica> live = replicas.live();
        List<Views.TopicRow> rows = new ArrayList<>();
        // Topics with jobs, and those a live replica serves that never had one.
        java.util.TreeMap<String, TopicStats> known = new java.util.TreeMap<>();
        store.topics().forEach(t -> known.put(t.topic(), t));
        live.values().forEach(r -> r.serves().forEach(t -> known.putIfAbsent(t, new TopicStats(t, 0, 0, 0, -1))));
        // The overview reads each topic (one bounded script per partition): at most MAX_TOPICS of them.
        boolean capped = known.size() > MAX_TOPICS;
        Map<String, TopicStats> all = capped ? known.headMap(new ArrayList<>(known.keySet()).get(MAX_TOPICS)) : known;
        Map<String, TopicFlow> flows = control.flows(all.keySet());
        for (TopicStats t : all.values()) {
            TopicSnapshot s = store.peek(t.topic(), HOUR_MS, 0, 0, 0);
            TopicFlow flow = flows.get(t.topic());
            double enq = 0, ok = 0, fail = 0, p99 = -1;
            for (ReplicaRegistry.Replica r : live.values()) {
                ReplicaRegistry.Rates rates = r.rates().get(t.topic());
                if (rates != null) {
                    enq += rates.enqueued();
                    ok += rates.succeeded();
                    fail += rates.failed();
                    p99 = Math.max(p99, rates.latenessP99Ms());
                }
            }
            rows.add(new Views.TopicRow(t.topic(), t.scheduled(), s.dueNow(), age(s.oldestDueMs(), s.redisNowMs()),
                    t.inflight(), t.dead(), flow != null && flow.paused(), throttledUntil(flow), rateLimit(flow),
                    maxInFlight(flow), servedBy(live, t.topic()),
                    rate(enq), rate(ok), rate(fail),
                    p99 < 0 ? "—" : "≤ " + (long) p99 + " ms"));
        }
        List<Views.ScheduleRow> sched = new ArrayList<>();
        for (Schedule s : schedules.all()) {
            Schedules.Ticks t = schedules.ticks(s);
            sched.add(new Views.ScheduleRow(s.name(), s.source().json(), s.describe(), s.topic(),
                    t.last() == null ? "—" : TIME.format(t.last()), t.next() == null ? "—" : TIME.format(t.next())));
        }
        return new Views.Overview(page, rows, live.size(), sched, TIME.format(Instant.now()) + " UTC"
                + (capped ? " · the first " + MAX_TOPICS + " topics by name (find the others with their topic page)" : ""));
    }

    private Views.Topic topic(Views.Page page, String topic, String message) {
        TopicSnapshot s = store.peek(topic, HOUR_MS, BUCKETS, LIST, LIST);
        long max = 1;
        for (long c : s.timeline()) {
            max = Math.max(max, c);
        }
        List<Views.Bar> bars = new ArrayList<>(BUCKETS);
        for (int i = 0; i < s.timeline().length; i++) {
            long from = s.redisNowMs() + i * HOUR_MS;
            bars.add(new Views.Bar(HOUR.format(Instant.ofEpochMilli(from)), s.timeline()[i], s.timeline()[i] * 100 / max));
        }
        List<Views.JobRow> next = new ArrayList<>();
        for (TopicSnapshot.Scheduled j : s.next()) {
            JobRecord r = j.record();
            next.add(new Views.JobRow(j.id(), TIME.format(Instant.ofEpochMilli(j.runAtMs())),
                    j.runAtMs() <= s.redisNowMs() ? "due " + age(j.runAtMs(), s.redisNowMs()) + " ago"
                            : "in " + duration(j.runAtMs() - s.redisNowMs()),
                    r == null ? 0 : r.attempts(), preview(r == null ? null : r.payloadOrNull())));
        }
        List<Views.InflightRow> running = new ArrayList<>();
        for (TopicSnapshot.Running j : s.inflight()) {
            JobRecord r = j.record();
            running.add(new Views.InflightRow(j.id(), j.holder(), r == null ? 0 : r.attempts() + 1,
                    r == null ? "—" : age(r.runAt(), s.redisNowMs()),
                    duration(Math.max(0, j.leaseDeadlineMs() - s.redisNowMs()))));
        }
        List<Views.DeadRow> dead = new ArrayList<>();
        for (DeadJob d : store.dead(topic, DEAD_LIST)) {
            dead.add(new Views.DeadRow(d.id(), TIME.format(Instant.ofEpochMilli(d.diedAt())), d.record().attempts(),
                    d.record().lostAttempts(), d.record().lastError(), preview(d.record().payloadOrNull())));
        }
        List<Views.FailedCallbackRow> failedCallbacks = new ArrayList<>();
        for (DeadCallbackStore.DeadCallback c : callbacks.failedCallbacks(topic, DEAD_LIST)) {
            failedCallbacks.add(new Views.FailedCallbackRow(c.id(), TIME.format(Instant.ofEpochMilli(c.diedAt())), c.tries(),
                    c.lastError()));
        }
        Map<String, ReplicaRegistry.Replica> live = replicas.live();
        TopicFlow flow = control.flow(topic);
        return new Views.Topic(page, topic, message, s.scheduled(), s.dueNow(), age(s.oldestDueMs(), s.redisNowMs()),
                s.inflightCount(), s.dead(), flow.paused(), throttledUntil(flow), rateLimit(flow), maxInFlight(flow),
                servedBy(live, topic), bars,
                next, running, dead,
                failedCallbacks, TIME.format(Instant.ofEpochMilli(s.redisNowMs())) + " UTC");
    }

    /** Until when the topic's HTTP target asked for no call (429/503 + Retry-After), UTC; null when it did not. */
    private static String throttledUntil(TopicFlow flow) {
        return flow == null || flow.throttledUntil() == null ? null : TIME.format(flow.throttledUntil()) + " UTC";
    }

    private static String rateLimit(TopicFlow flow) {
        if (flow == null || flow.rateLimit() == null) {
            return "none";
        }
        double r = flow.rateLimit().perSecond();
        return (r == Math.rint(r) ? Long.toString((long) r) : Double.toString(r)) + "/s ("
                + flow.rateLimit().source().json() + ")";
    }

    /** "3/5 in flight (api)" under a concurrency cap (its jobs in flight over all replicas, the cap, its source); "—" without. */
    private static String maxInFlight(TopicFlow flow) {
        if (flow == null || flow.maxInFlight() == null) {
            return "—";
        }
        TopicFlow.MaxInFlight m = flow.maxInFlight();
        return m.inflight() + "/" + m.max() + " in flight (" + m.source().json() + ")";
    }

    private static String servedBy(Map<String, ReplicaRegistry.Replica> live, String topic) {
        List<String> ids = new ArrayList<>();
        live.forEach((id, r) -> {
            if (r.serves().contains(topic)) {
                ids.add(id);
            }
        });
        return ids.isEmpty() ? "no replica" : String.join(", ", ids);
    }

    private static String rate(double perSecond) {
        return perSecond == 0 ? "0" : perSecond < 10 ? String.format("%.2f", perSecond) : String.format("%.0f", perSecond);
    }

    private static String age(long sinceMs, long nowMs) {
        return sinceMs < 0 ? "—" : duration(nowMs - sinceMs);
    }

    static String duration(long ms) {
        if (ms < 1000) {
            return ms + " ms";
        }
        long s = ms / 1000;
        if (s < 120) {
            return s + " s";
        }
        if (s < 7200) {
            return s / 60 + " min";
        }
        if (s < 172_800) {
            return s / 3600 + " h";
        }
        return s / 86_400 + " d";
    }

    private static String time(Instant t) {
        return t == null ? null : TIME.format(t) + " UTC";
    }

    /** The payload's first 120 characters, as sent. */
    private static String preview(String payload) {
        if (payload == null) {
            return "";
        }
        return payload.length() > 120 ? payload.substring(0, 120) + "…" : payload;
    }

    /** The payload indented for reading; as sent when it is not JSON an indenter can read. */
    private String pretty(String payload) {
        if (payload == null) {
            return null;
        }
        try {
            return mapper.writerWithDefaultPrettyPrinter().writeValueAsString(mapper.readTree(payload));
        } catch (java.io.IOException | RuntimeException e) {
            return payload;
        }
    }

    /** No page of the dashboard may be framed by another site (its buttons would be clicked for it). */
    @org.jboss.resteasy.reactive.server.ServerResponseFilter
    public void noFraming(jakarta.ws.rs.container.ContainerResponseContext response,
            org.jboss.resteasy.reactive.server.SimpleResourceInfo resource) {
        if (resource != null && resource.getResourceClass() == DashboardResource.class) {
            response.getHeaders().putSingle("Content-Security-Policy", "frame-ancestors 'none'");
            response.getHeaders().putSingle("X-Frame-Options", "DENY");
        }
    }

    /** Redis away: a page that says so (503), not a stack trace. */
    @org.jboss.resteasy.reactive.server.ServerExceptionMapper
    public Response unavailable(StoreUnavailableException e) {
        return Response.status(503).type(MediaType.TEXT_PLAIN).header("Retry-After", "1")
                .entity("delayq dashboard: Redis is unavailable (" + e.getMessage() + ")").build();
    }

    /** A bad topic or id in the address: 400 naming it. */
    @org.jboss.resteasy.reactive.server.ServerExceptionMapper
    public Response invalid(io.delayq.core.InvalidJobException e) {
        return Response.status(400).type(MediaType.TEXT_PLAIN).entity(e.getMessage()).build();
    }
}
