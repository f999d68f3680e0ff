package io.delayq.api;

import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

import io.delayq.core.InvalidJobException;
import io.delayq.store.StoreUnavailableException;

/**
 * The one place errors become RFC 9457 problem bodies: a broken rule names its field (4xx),
 * Redis away is 503 with Retry-After, anything unexpected is a 500 problem (and a log line).
 */
public class ProblemMappers {
    private static final Logger LOG = Logger.getLogger(ProblemMappers.class);

    @ServerExceptionMapper
    public Response invalid(InvalidJobException e, UriInfo uri) {
        return Problem.response(e.status(), e.getMessage(), e.field(), path(uri)).build();
    }

    @ServerExceptionMapper
    public Response unavailable(StoreUnavailableException e, UriInfo uri) {
        LOG.debugf("503: %s", e.getMessage());
        // One script per topic partition is atomic: no job is ever half-written. A batch spanning
        // several partitions may have written the earlier ones; resending is safe for jobs with ids.
        return Problem.response(503, "Redis is unavailable; retry later (enqueue is idempotent by job id)", null, path(uri))
                .header("Retry-After", "1").build();
    }

    @ServerExceptionMapper
    public Response web(WebApplicationException e, UriInfo uri) {
        int status = e.getResponse().getStatus();
        Response.ResponseBuilder b = Problem.response(status, e.getMessage(), null, path(uri));
        e.getResponse().getHeaders().forEach((name, values) -> {
            if (!"Content-Type".equalsIgnoreCase(name)) {
                values.forEach(v -> b.header(name, v));
            }
        });
        return b.build();
    }

    @ServerExceptionMapper(priority = 10_000)
    public Response unexpected(RuntimeException e, UriInfo uri) {
        LOG.errorf(e, "unexpected error on %s", path(uri));
        return Problem.response(500, "internal error: " + e.getClass().getSimpleName(), null, path(uri)).build();
    }

    private static String path(UriInfo uri) {
        return uri == null ? null : uri.getRequestUri().getRawPath();
    }
}
