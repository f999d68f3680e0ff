package io.delayq.api;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import jakarta.ws.rs.DefaultValue;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

import io.delayq.core.InvalidJobException;
import io.delayq.security.DelayqAccessPolicy;
import io.delayq.store.HistoryStore;
import io.quarkus.arc.properties.IfBuildProperty;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.vertx.http.security.AuthorizationPolicy;

/**
 * The per-minute history of the jobs, summed over every replica: {@code GET /history} (all
 * topics) and {@code GET /topics/{topic}/history} (see {@link HistoryStore}).
 */
@IfBuildProperty(name = "delayq.api.enabled", stringValue = "true", enableIfMissing = true)
@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)
@Path("/history")
@Produces(MediaType.APPLICATION_JSON)
public class HistoryResource {
    private final HistoryStore store;

    public HistoryResource(HistoryStore store) {
        this.store = store;
    }

    /**
     * One minute of history.
     *
     * @param minute its start, ISO-8601 UTC
     * @param latenessP99Ms the p99 of the attempts that started in it (time from runAt to start),
     *        as the upper bound of its histogram bin (bins of a factor √2); null when none started
     */
    @RegisterForReflection
    public record MinuteView(String minute, long enqueued, long succeeded, long failed,
            @org.eclipse.microprofile.openapi.annotations.media.Schema(nullable = true, description = "null when no attempt"
                    + " started in the minute") Long latenessP99Ms) {
    }

    @GET
    @Operation(summary = "Jobs enqueued, succeeded and failed and lateness p99 per minute, all topics summed, over "
            + "the last N minutes (oldest first, every minute present, the last one in progress)")
    public List<MinuteView> history(@Parameter(description = "Minutes to return, 1 to 1440 (24 hours); default 60")
    @QueryParam("minutes") @DefaultValue("60") String minutes) {
        return views(store.read(null, minutes(minutes)));
    }

    static int minutes(String text) {
        int n;
        try {
            n = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            n = -1;
        }
        if (n < 1 || n > HistoryStore.MAX_MINUTES) {
            throw new InvalidJobException("minutes", "minutes must be an integer between 1 and " + HistoryStore.MAX_MINUTES);
        }
        return n;
    }

    static List<MinuteView> views(List<HistoryStore.MinuteCounts> minutes) {
        List<MinuteView> out = new ArrayList<>(minutes.size());
        for (HistoryStore.MinuteCounts m : minutes) {
            out.add(new MinuteView(Instant.ofEpochMilli(m.minute()).toString(), m.enqueued(), m.succeeded(), m.failed(),
                    m.latenessP99Ms()));
        }
        return out;
    }

    /** Errors of this resource as problem bodies (local: the service's own resources are left alone). */
    @ServerExceptionMapper
    public Response problem(RuntimeException e, UriInfo uri) {
        return ProblemMappers.problem(e, uri);
    }
}
