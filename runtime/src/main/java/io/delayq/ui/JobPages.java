package io.delayq.ui;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import org.eclipse.microprofile.openapi.annotations.Operation;

import io.delayq.api.BulkBody;
import io.delayq.core.InvalidJobException;
import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.JobValidator;
import io.delayq.security.AccessMode;
import io.delayq.security.DelayqAccessPolicy;
import io.delayq.store.JobListing;
import io.delayq.store.StoreUnavailableException;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.vertx.http.security.AuthorizationPolicy;

/**
 * The dashboard's job browser, {@code /delayq/jobs?topic=T&state=S&idPrefix=&group=&from=&to=&cursor=}:
 * a topic's scheduled, in-flight or dead jobs, {@value #PAGE} a page, through {@link JobListing}
 * (the listing of {@code GET /topics/{t}/jobs}), with the row actions of the topic page: cancel on
 * scheduled and in-flight rows, requeue and purge on dead ones, posted to the dashboard's existing
 * actions. Its own class and template: the topic page's resource is big enough.
 */
@IfBuildProperty(name = "delayq.ui.enabled", stringValue = "true", enableIfMissing = true)
@Path("/delayq/jobs")
@Produces(MediaType.TEXT_HTML)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
public class JobPages {
    static final int PAGE = 50;
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss").withZone(ZoneOffset.UTC);
    private final JobListing listing;
    private final Pages pages;
    private final AccessMode access;
    private final SecurityIdentity identity;
    private final String assets = Pages.assets();

    public JobPages(JobListing listing, Pages pages, AccessMode access, SecurityIdentity identity) {
        this.listing = listing;
        this.pages = pages;
        this.access = access;
        this.identity = identity;
    }

    /** One job of the page, its values as shown (UTC times; {@code priority} as {@link Pages#priority}). */
    @RegisterForReflection
    public record Row(String id, String state, String runAt, int attempts, String group, boolean held, String lastError,
            String deadAt, Integer priority, String finishedAt, String result) {
    }

    /** The most characters of a result a row shows (the job's page shows it whole). */
    static final int RESULT_PREVIEW = 120;

    /**
     * The page: its filter as typed, the rows, the query of the next page (null: this was the last) and
     * of the first (null: this is it),
     * whether a page came back short with more to come, and a message (a bad filter).
     */
    @RegisterForReflection
    public record View(Views.Page page, String topic, String state, String idPrefix, String group, String from, String to,
            List<Row> rows, String next, String first, boolean shortPage, String message) {
    }

    @GET
    @Operation(hidden = true)
    public Response jobs(@QueryParam("topic") String topic, @QueryParam("state") String state,
            @QueryParam("idPrefix") String idPrefix, @QueryParam("group") String group, @QueryParam("from") String from,
            @QueryParam("to") String to, @QueryParam("cursor") String cursor, @Context UriInfo uri) {
        JobValidator.checkTopic("topic", topic == null ? "" : topic);
        Views.Page page = Pages.page(uri, assets, access, identity);
        JobState s = "inflight".equals(state) ? JobState.INFLIGHT : "dead".equals(state) ? JobState.DEAD
                : "succeeded".equals(state) ? JobState.SUCCEEDED : JobState.SCHEDULED;
        String shown = s.json();
        List<Row> rows = new ArrayList<>();
        String next = null, message = null;
        int status = 200;
        try {
            // Succeeded jobs with their results (fields=full: a page is within its limit).
            JobListing.Page p = listing.list(topic, s, BulkBody.filter(idPrefix, group, from, to), PAGE,
                    s == JobState.SUCCEEDED,
                    cursor == null || cursor.isEmpty() ? null : cursor);
            for (JobListing.Listed l : p.jobs()) {
                rows.add(row(l.info()));
            }
            if (p.cursor() != null) {
                next = query(topic, shown, idPrefix, group, from, to) + "&cursor=" + enc(p.cursor());
            }
        } catch (InvalidJobException | JobListing.BadCursor e) {
            message = e.getMessage();
            status = 400;
        }
        View v = new View(page, topic, shown, text(idPrefix), text(group), text(from), text(to), rows, next,
                cursor == null || cursor.isEmpty() ? null : query(topic, shown, idPrefix, group, from, to),
                next != null && rows.size() < PAGE, message);
        return Response.status(status).entity(pages.render("jobs", v)).header("Content-Security-Policy",
                "frame-ancestors 'none'").header("X-Frame-Options", "DENY").build();
    }

    private static Row row(JobInfo j) {
        String result = j.result() == null ? Boolean.TRUE.equals(j.resultDropped()) ? "(dropped: too large)" : null
                : j.result().length() > RESULT_PREVIEW ? j.result().substring(0, RESULT_PREVIEW) + "…" : j.result();
        return new Row(j.id(), j.state().name().toLowerCase(java.util.Locale.ROOT), time(j.runAt()), j.attempts(),
                j.group(), Boolean.TRUE.equals(j.held()), j.lastError(), time(j.deadAt()), Pages.priority(j.priority()),
                time(j.finishedAt()), result);
    }

    private static String time(Instant t) {
        return t == null ? null : TIME.format(t);
    }

    /** The page's filter as a query (without the cursor). */
    static String query(String topic, String state, String idPrefix, String group, String from, String to) {
        return "topic=" + enc(topic) + "&state=" + enc(state) + "&idPrefix=" + enc(text(idPrefix)) + "&group="
                + enc(text(group)) + "&from=" + enc(text(from)) + "&to=" + enc(text(to));
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static String text(String s) {
        return s == null ? "" : s;
    }

    /** Redis away: a page that says so (503), not a stack trace. */
    @org.jboss.resteasy.reactive.server.ServerExceptionMapper
    public Response unavailable(StoreUnavailableException e) {
        return Response.status(503).type(MediaType.TEXT_PLAIN).header("Retry-After", "1")
                .entity("delayq dashboard: Redis is unavailable (" + e.getMessage() + ")").build();
    }

    /** A bad topic in the address: 400 naming it. */
    @org.jboss.resteasy.reactive.server.ServerExceptionMapper
    public Response invalid(InvalidJobException e) {
        return Response.status(400).type(MediaType.TEXT_PLAIN).entity(e.getMessage()).build();
    }
}
