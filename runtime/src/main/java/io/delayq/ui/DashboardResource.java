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

import io.delayq.api.DeadFilters;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRetry;
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
import io.delayq.store.DeadSweep;
import io.delayq.store.Inspection;
import io.delayq.store.JobRecord;
import io.delayq.store.StoreUnavailableException;
import io.delayq.store.TopicSnapshot;
import io.delayq.store.TopicStats;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.vertx.http.runtime.CurrentVertxRequest;
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
    private final DeadSweep sweep;
    private final CurrentVertxRequest request;

    public DashboardResource(Inspection store, DeadCallbackStore callbacks, Jobs jobs, Schedules schedules,
            ReplicaRegistry replicas, TopicControl control, Pages pages, ObjectMapper mapper, AccessMode access,
            SecurityIdentity identity, DeadSweep sweep, CurrentVertxRequest request) {
        this.sweep = sweep;
        this.request = request;
        this.access = access;
        this.identity = identity;
        this.assets = Pages.assets();
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
    public String topic(@PathParam("topic") String topic, @QueryParam("idPrefix") String idPrefix,
            @QueryParam("error") String error, @Context UriInfo uri, @Context SecurityContext security) {
        JobValidator.checkTopic("topic", topic);
        return pages.render("topic", topic(page(uri, security), topic, null, DeadFilters.of(idPrefix, error)));
    }

    @GET
    @Path("/topics/{topic}/fragment")
    @Operation(hidden = true)
    public String topicFragment(@PathParam("topic") String topic, @QueryParam("idPrefix") String idPrefix,
            @QueryParam("error") String error, @Context UriInfo uri, @Context SecurityContext security) {
        JobValidator.checkTopic("topic", topic);
        return pages.render("topic-body", topic(page(uri, security), topic, null, DeadFilters.of(idPrefix, error)));
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
                    new Views.Job(page, topic, id, false, null, 0, null, null, 0, null, null, null, null, null, false,
                            false, null, null, null, null, null))).build();
        }
        JobInfo j = found.get().info();
        return Response.ok(pages.render("job", new Views.Job(page, topic, id, true, j.state().json(), j.attempts(),
                j.maxAttempts() == null ? "topic default" : j.maxAttempts().toString(), retry(j.retry()),
                j.lostAttempts() == null ? 0 : j.lostAttempts(), time(j.runAt()),
                time(j.finishedAt()), j.lastError(), pretty(found.get().payload()), j.group(),
                Boolean.TRUE.equals(j.held()), Boolean.TRUE.equals(j.cancelling()),
                j.timeoutMs() == null ? null : j.timeoutMs() + " ms", j.expiresAt() == null ? null : time(j.expiresAt()),
                j.priority(), pretty(j.result()), Boolean.TRUE.equals(j.resultDropped())
                        ? "dropped: larger than the payload limit (delayq.api.max-payload-bytes), or not JSON"
                        : Boolean.TRUE.equals(j.resultCut()) ? "cut: the target's answer was larger than the payload limit"
                                : null))).build();
    }

    /**
     * A job's own retry backoff as its page shows it: "initial → max", a bound it did not give
     * told as the topic's, moved to meet the one it gave (see {@link JobRetry#applyTo}); null for
     * none (the job follows its topic).
     */
    private static String retry(JobRetry own) {
        if (own == null || own.initialMs() == null && own.maxMs() == null) {
            return null;
        }
        if (own.maxMs() == null) {
            return exactly(own.initialMs()) + " → the topic's max (at least " + exactly(own.initialMs()) + ")";
        }
        if (own.initialMs() == null) {
            return "the topic's initial delay (at most " + exactly(own.maxMs()) + ") → " + exactly(own.maxMs());
        }
        return exactly(own.initialMs()) + " → " + exactly(own.maxMs());
    }

    /** A duration given in ms, in the largest unit that shows it without rounding (1500 ms, 90 s, 3 d). */
    private static String exactly(long ms) {
        if (ms % 1000 != 0) {
            return ms + " ms";
        }
        long s = ms / 1000;
        if (s % 60 != 0) {
            return s + " s";
        }
        if (s % 3600 != 0) {
            return s / 60 + " min";
        }
        if (s % 86_400 != 0) {
            return s / 3600 + " h";
        }
        return s / 86_400 + " d";
    }

    /**
     * The header's "Find job" box: {@code q} is a job id, or {@code topic/id}. An id alone is
     * looked up in every topic the dashboard lists (the first {@value #MAX_TOPICS} by name, as on
     * the overview): one {@code get} script per topic, on the id's partition, all sent at once.
     * One match goes to its job page (303); several are listed; none is a 404 page saying where
     * it looked.
     */
    @GET
    @Path("/find")
    @Operation(hidden = true)
    public Response find(@QueryParam("q") String q, @Context UriInfo uri, @Context SecurityContext security) {
        Views.Page page = page(uri, security);
        String query = q == null ? "" : q.trim();
        if (query.isEmpty()) {
            return Response.status(400).entity(pages.render("find", new Views.Find(page, query, 0, false, List.of(),
                    "Type a job id, or topic/id."))).build();
        }
        int slash = query.indexOf('/');
        String id = slash < 0 ? query : query.substring(slash + 1);
        List<String> topics;
        boolean capped = false;
        if (slash >= 0) {
            String topic = query.substring(0, slash);
            JobValidator.checkTopic("topic", topic);
            topics = List.of(topic);
        } else {
            java.util.TreeSet<String> known = new java.util.TreeSet<>(store.topicNames());
            replicas.live().values().forEach(r -> known.addAll(r.serves()));
            capped = known.size() > MAX_TOPICS;
            topics = new ArrayList<>(known).subList(0, Math.min(MAX_TOPICS, known.size()));
        }
        JobValidator.checkId("id", id);
        List<io.vertx.core.Future<Optional<JobInfo>>> lookups = new ArrayList<>(topics.size());
        for (String topic : topics) {
            lookups.add(store.getAsync(topic, id));
        }
        List<Views.Found> found = new ArrayList<>();
        for (int i = 0; i < topics.size(); i++) {
            Optional<JobInfo> j = store.await(lookups.get(i));
            if (j.isPresent()) {
                found.add(new Views.Found(topics.get(i), id, j.get().state().json()));
            }
        }
        if (found.size() == 1) {
            // A path, not an absolute URL: the Host the request named is not repeated to the browser.
            return Response.status(303).header(jakarta.ws.rs.core.HttpHeaders.LOCATION, jakarta.ws.rs.core.UriBuilder
                    .fromPath(uri.getBaseUri().getRawPath()).path("delayq/job").queryParam("topic", found.get(0).topic())
                    .queryParam("id", id).build().toString()).build();
        }
        String where = slash >= 0 ? "in topic " + topics.get(0)
                : "in any of the " + topics.size() + " topic(s) looked at"
                        + (capped ? " (the first " + MAX_TOPICS + " by name; give topic/id for another)" : "");
        String message = found.isEmpty() ? "No job " + id + " " + where
                + ": it never existed, ran and was acknowledged, or was cancelled or purged."
                : found.size() + " topics hold a job " + id + ":";
        return Response.status(found.isEmpty() ? 404 : 200)
                .entity(pages.render("find", new Views.Find(page, query, topics.size(), capped, found, message))).build();
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
        return act(topic, uri, security, ui, site, true, () -> "requeued " + sweep.requeue(topic, DeadSweep.Filter.ALL)
                + " dead job(s): due now (those that died after the click are left)");
    }

    @POST
    @Path("/topics/{topic}/dead/purge-all")
    @Operation(hidden = true)
    public Response purgeAll(@PathParam("topic") String topic, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, true, () -> "purged " + sweep.purge(topic, DeadSweep.Filter.ALL)
                + " dead job(s) (those that died after the click are left)");
    }

    /**
     * "Requeue filtered": the dead jobs that match the page's filter (sent again in the query, and
     * checked again here), dead when the click arrived; the page keeps its filter.
     */
    @POST
    @Path("/topics/{topic}/dead/requeue-filtered")
    @Operation(hidden = true)
    public Response requeueFiltered(@PathParam("topic") String topic, @QueryParam("idPrefix") String idPrefix,
            @QueryParam("error") String error, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        DeadSweep.Filter filter = DeadFilters.of(idPrefix, error);
        return act(topic, filter, uri, security, ui, site, () -> "requeued " + sweep.requeue(topic, filter)
                + " dead job(s) whose " + describe(filter) + ": due now (those that died after the click are left)");
    }

    /** "Purge filtered": as {@link #requeueFiltered}, deleting them for good. */
    @POST
    @Path("/topics/{topic}/dead/purge-filtered")
    @Operation(hidden = true)
    public Response purgeFiltered(@PathParam("topic") String topic, @QueryParam("idPrefix") String idPrefix,
            @QueryParam("error") String error, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        DeadSweep.Filter filter = DeadFilters.of(idPrefix, error);
        return act(topic, filter, uri, security, ui, site, () -> "purged " + sweep.purge(topic, filter)
                + " dead job(s) whose " + describe(filter) + " (those that died after the click are left)");
    }

    @POST
    @Path("/topics/{topic}/jobs/{id}/cancel")
    @Operation(hidden = true)
    public Response cancel(@PathParam("topic") String topic, @PathParam("id") String id, @Context UriInfo uri,
            @Context SecurityContext security, @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return act(topic, uri, security, ui, site, false, () -> switch (jobs.cancel(topic, id)) {
            case CANCELLED -> "cancelled " + id;
            case CANCELLING -> "cancelling " + id + ": its running attempt is being ended; it will not run again";
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
        return scheduleAction(uri, security, ui, site,
                () -> schedules.trigger(name).map(j -> "triggered " + name + ": job " + j.id()).orElse("no schedule " + name));
    }

    @POST
    @Path("/schedules/{name}/pause")
    @Operation(hidden = true)
    public Response pauseSchedule(@PathParam("name") String name, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return scheduleAction(uri, security, ui, site, () -> setPaused(name, true));
    }

    @POST
    @Path("/schedules/{name}/resume")
    @Operation(hidden = true)
    public Response resumeSchedule(@PathParam("name") String name, @Context UriInfo uri, @Context SecurityContext security,
            @HeaderParam(UI_HEADER) String ui, @HeaderParam("Sec-Fetch-Site") String site) {
        return scheduleAction(uri, security, ui, site, () -> setPaused(name, false));
    }

    private String setPaused(String name, boolean paused) {
        try {
            return schedules.setPaused(name, paused).map(s -> (paused ? "paused " : "resumed ") + name)
                    .orElse("no schedule " + name);
        } catch (Schedules.ConfiguredScheduleException e) {
            return e.getMessage();
        }
    }

    /** Runs an operator's action on a schedule and answers the refreshed overview with what happened. */
    private Response scheduleAction(UriInfo uri, SecurityContext security, String ui, String site,
            java.util.function.Supplier<String> action) {
        Response refused = refuse(security, ui, site, true);
        if (refused != null) {
            return refused;
        }
        Views.Page page = page(uri, security);
        String msg = action.get();
        Views.Overview o = overview(page);
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
        return Response.ok(pages.render("topic-body", topic(page(uri, security), topic, message, pageFilter()))).build();
    }

    /**
     * The dead-list filter of the page an action was clicked on: htmx names the page's address in
     * {@code HX-Current-URL}, and the refreshed body keeps showing what the page showed. Only what
     * is shown depends on it (an action's own subject is in its path); anything unreadable there
     * shows the whole list.
     */
    private DeadSweep.Filter pageFilter() {
        String url = request.getCurrent() == null ? null : request.getCurrent().request().getHeader("HX-Current-URL");
        if (url == null) {
            return DeadSweep.Filter.ALL;
        }
        try {
            String query = java.net.URI.create(url).getRawQuery();
            String idPrefix = null, error = null;
            for (String pair : query == null ? new String[0] : query.split("&")) {
                int eq = pair.indexOf('=');
                String name = eq < 0 ? pair : pair.substring(0, eq);
                String value = eq < 0 ? "" : java.net.URLDecoder.decode(pair.substring(eq + 1), java.nio.charset.StandardCharsets.UTF_8);
                if (name.equals("idPrefix")) {
                    idPrefix = value;
                } else if (name.equals("error")) {
                    error = value;
                }
            }
            return DeadFilters.of(idPrefix, error);
        } catch (RuntimeException e) {
            return DeadSweep.Filter.ALL;
        }
    }

    /** An operator's action on the filtered dead list: the refreshed body keeps the filter. */
    private Response act(String topic, DeadSweep.Filter filter, UriInfo uri, SecurityContext security, String ui,
            String site, java.util.function.Supplier<String> action) {
        JobValidator.checkTopic("topic", topic);
        Response refused = refuse(security, ui, site, true);
        if (refused != null) {
            return refused;
        }
        String message = action.get();
        return Response.ok(pages.render("topic-body", topic(page(uri, security), topic, message, filter))).build();
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

    // ---------------------------------------------------------------- views

    /** Where the pages are, and what the viewer may do. */
    private Views.Page page(UriInfo uri, SecurityContext security) {
        return Pages.page(uri, assets, access, identity);
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
        Map<String, Long> inflight = new java.util.HashMap<>();
        all.values().forEach(t -> inflight.put(t.topic(), t.inflight()));
        Map<String, TopicFlow> flows = control.flows(all.keySet(), inflight);
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
                    t.last() == null ? "—" : TIME.format(t.last()),
                    t.next() == null || s.paused() ? "—" : TIME.format(t.next()), s.paused()));
        }
        return new Views.Overview(page, rows, live.size(), sched, TIME.format(Instant.now()) + " UTC"
                + (capped ? " · the first " + MAX_TOPICS + " topics by name (find the others with their topic page)" : ""));
    }

    private Views.Topic topic(Views.Page page, String topic, String message) {
        return topic(page, topic, message, DeadSweep.Filter.ALL);
    }

    private Views.Topic topic(Views.Page page, String topic, String message, DeadSweep.Filter filter) {
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
                    r == null ? 0 : r.attempts(), preview(r == null ? null : r.payloadOrNull()),
                    Pages.priority(r == null ? null : r.priority())));
        }
        List<Views.HeldRow> held = new ArrayList<>();
        for (TopicSnapshot.Held j : s.held()) {
            JobRecord r = j.record();
            held.add(new Views.HeldRow(j.id(), j.group(), TIME.format(Instant.ofEpochMilli(j.runAtMs())),
                    j.runAtMs() <= s.redisNowMs() ? "due " + age(j.runAtMs(), s.redisNowMs()) + " ago"
                            : "in " + duration(j.runAtMs() - s.redisNowMs()),
                    r == null ? 0 : r.attempts(), preview(r == null ? null : r.payloadOrNull()),
                    Pages.priority(r == null ? null : r.priority())));
        }
        List<Views.InflightRow> running = new ArrayList<>();
        for (TopicSnapshot.Running j : s.inflight()) {
            JobRecord r = j.record();
            running.add(new Views.InflightRow(j.id(), j.holder(), r == null ? 0 : r.attempts() + 1,
                    r == null ? "—" : age(r.runAt(), s.redisNowMs()),
                    duration(Math.max(0, j.leaseDeadlineMs() - s.redisNowMs())), j.cancelling(),
                    Pages.priority(r == null ? null : r.priority())));
        }
        List<Views.DeadRow> dead = new ArrayList<>();
        Views.DeadFilter deadFilter = deadFilter(topic, filter);
        for (DeadJob d : filter.all() ? store.dead(topic, DEAD_LIST) : sweep.list(topic, filter, DEAD_LIST).jobs()) {
            dead.add(new Views.DeadRow(d.id(), TIME.format(Instant.ofEpochMilli(d.diedAt())), d.record().attempts(),
                    d.record().lostAttempts(), d.record().lastError(), preview(d.record().payloadOrNull()),
                    Pages.priority(d.record().priority())));
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
                next, s.heldCount(), held, running, dead,
                failedCallbacks, TIME.format(Instant.ofEpochMilli(s.redisNowMs())) + " UTC", deadFilter,
                perSecond(flow.groupRateLimit()));
    }

    /**
     * The dead list's filter as the page shows it: the values, the query that carries it (the
     * refresh and the buttons send it again), and how many dead jobs match — counted among the
     * newest {@link DeadSweep#LIST_EXAMINED} of each partition, so "N+" when there are more.
     */
    private Views.DeadFilter deadFilter(String topic, DeadSweep.Filter filter) {
        if (filter.all()) {
            return new Views.DeadFilter(false, "", "", "", 0, "0", "", DeadSweep.LIST_EXAMINED);
        }
        DeadSweep.Count c = sweep.count(topic, filter);
        StringBuilder q = new StringBuilder();
        if (!filter.idPrefix().isEmpty()) {
            q.append("idPrefix=").append(java.net.URLEncoder.encode(filter.idPrefix(), java.nio.charset.StandardCharsets.UTF_8));
        }
        if (!filter.error().isEmpty()) {
            q.append(q.isEmpty() ? "" : "&").append("error=")
                    .append(java.net.URLEncoder.encode(filter.error(), java.nio.charset.StandardCharsets.UTF_8));
        }
        return new Views.DeadFilter(true, filter.idPrefix(), filter.error(), q.toString(), c.matching(),
                c.matching() + (c.truncated() ? "+" : ""), describe(filter), DeadSweep.LIST_EXAMINED);
    }

    /** "id starts with 'order-' and last error contains 'timeout'". */
    private static String describe(DeadSweep.Filter filter) {
        List<String> parts = new ArrayList<>();
        if (!filter.idPrefix().isEmpty()) {
            parts.add("id starts with '" + filter.idPrefix() + "'");
        }
        if (!filter.error().isEmpty()) {
            parts.add("last error contains '" + filter.error() + "'");
        }
        return parts.isEmpty() ? "id is any" : String.join(" and ", parts);
    }

    /** Until when the topic's HTTP target asked for no call (429/503 + Retry-After), UTC; null when it did not. */
    private static String throttledUntil(TopicFlow flow) {
        return flow == null || flow.throttledUntil() == null ? null : TIME.format(flow.throttledUntil()) + " UTC";
    }

    private static String rateLimit(TopicFlow flow) {
        return perSecond(flow == null ? null : flow.rateLimit());
    }

    /** "5/s (api)", "0.5/s (config)"; "none" without a limit. */
    private static String perSecond(TopicFlow.RateLimit limit) {
        if (limit == null) {
            return "none";
        }
        double r = limit.perSecond();
        return (r == Math.rint(r) ? Long.toString((long) r) : Double.toString(r)) + "/s (" + limit.source().json() + ")";
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
