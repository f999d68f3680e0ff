package io.delayq.api;

import java.util.List;

import jakarta.ws.rs.NotAcceptableException;
import jakarta.ws.rs.NotAllowedException;
import jakarta.ws.rs.NotSupportedException;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

import io.delayq.core.InvalidJobException;
import io.delayq.security.AccessProblems;
import io.delayq.store.StoreUnavailableException;
import io.quarkus.security.AuthenticationCompletionException;
import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.AuthenticationRedirectException;
import io.quarkus.security.ForbiddenException;
import io.quarkus.security.UnauthorizedException;

/**
 * The one place errors become RFC 9457 problem bodies: a broken rule names its field (4xx),
 * Redis away is 503 with Retry-After, anything unexpected is a 500 problem (and a log line).
 * <p>
 * Only delayq's own exceptions are mapped globally (they also reach a service's own endpoints
 * that call {@code Jobs}, where a 400 naming the field or a 503 is the right answer too). The
 * generic ones ({@link WebApplicationException}, any {@link RuntimeException}) are mapped only
 * for delayq's resources, through {@link #problem} called from their local mapper, so that a
 * service's own endpoints keep their own error handling.
 */
public class ProblemMappers {
    private static final Logger LOG = Logger.getLogger(ProblemMappers.class);

    @ServerExceptionMapper
    public Response invalid(InvalidJobException e, UriInfo uri) {
        return invalidProblem(e, uri);
    }

    @ServerExceptionMapper
    public Response unavailable(StoreUnavailableException e, UriInfo uri) {
        return unavailableProblem(e, uri);
    }

    private static Response invalidProblem(InvalidJobException e, UriInfo uri) {
        if (e instanceof io.delayq.core.IdTakenException taken) {
            return Problem.response(e.status(), e.getMessage(), e.field(), path(uri), taken.id(), null).build();
        }
        return Problem.response(e.status(), e.getMessage(), e.field(), path(uri)).build();
    }

    private static Response unavailableProblem(StoreUnavailableException e, UriInfo uri) {
        LOG.debugf("503: %s", e.getMessage());
        String reason = e instanceof io.delayq.store.NotReplicatedException || e instanceof io.delayq.store.RedisCredentialsException
                ? e.getMessage()
                : e instanceof io.delayq.store.RedisFullException
                        ? "Redis is full (its memory reached maxmemory): it takes no new jobs until memory is freed; jobs"
                                + " already accepted still run"
                        : "Redis is unavailable";
        // A full Redis stays full until an operator frees memory: clients need not retry every second.
        String retryAfter = e instanceof io.delayq.store.RedisFullException ? "10" : "1";
        if (e.jobs().isEmpty()) {
            return Problem.response(503, reason + "; retry later", null, path(uri)).header("Retry-After", retryAfter).build();
        }
        // One script per topic partition is atomic: no job is ever half-written. But a batch goes
        // partition by partition, and a script that timed out may have run: every job is named,
        // with whether it is stored, so that a retry with the same ids (a generated one too)
        // duplicates nothing.
        List<Problem.JobOutcome> jobs = e.jobs().stream()
                .map(j -> new Problem.JobOutcome(j.id(), j.topic(), j.stored().json())).toList();
        String detail = reason + "; retry later with the same ids (jobs: each one's outcome, stored, not stored or"
                + " unknown): enqueue is idempotent by job id";
        return Problem.response(503, detail, null, path(uri), jobs.size() == 1 ? jobs.get(0).id() : null, jobs)
                .header("Retry-After", retryAfter).build();
    }

    /**
     * 405, 406 and 415 are decided before any resource method is chosen, so the resources' own
     * mappers never see them: on delayq's paths they become problem bodies here; elsewhere the
     * service's response is left as Quarkus makes it.
     */
    @ServerExceptionMapper({ NotAllowedException.class, NotAcceptableException.class, NotSupportedException.class })
    public Response unmatched(WebApplicationException e, UriInfo uri) {
        return OpenApiContract.isDelayqPath(uri == null ? "" : uri.getPath()) ? web(e, uri) : e.getResponse();
    }

    /** Any exception out of a delayq resource, as a problem body. */
    static Response problem(RuntimeException e, UriInfo uri) {
        if (e instanceof InvalidJobException invalid) {
            return invalidProblem(invalid, uri);
        }
        if (e instanceof StoreUnavailableException unavailable) {
            return unavailableProblem(unavailable, uri);
        }
        if (e instanceof WebApplicationException web) {
            return web(web, uri);
        }
        // Access control (io.delayq.security.DelayqAccessPolicy) refused, or authentication failed on the way.
        if (e instanceof UnauthorizedException || e instanceof AuthenticationFailedException
                || e instanceof AuthenticationCompletionException) {
            return AccessProblems.unauthorized(path(uri));
        }
        if (e instanceof ForbiddenException) {
            return AccessProblems.forbidden(path(uri));
        }
        if (e instanceof AuthenticationRedirectException redirect) {
            return Response.status(redirect.getCode()).location(java.net.URI.create(redirect.getRedirectUri())).build();
        }
        return unexpected(e, uri);
    }

    private static Response web(WebApplicationException e, UriInfo uri) {
        int status = e.getResponse().getStatus();
        Response.ResponseBuilder b = Problem.response(status, e.getMessage(), null, path(uri));
        e.getResponse().getHeaders().forEach((name, values) -> {
            if (!"Content-Type".equalsIgnoreCase(name)) {
                values.forEach(v -> b.header(name, v));
            }
        });
        return b.build();
    }

    private static Response unexpected(RuntimeException e, UriInfo uri) {
        LOG.errorf(e, "unexpected error on %s", path(uri));
        return Problem.response(500, "internal error: " + e.getClass().getSimpleName(), null, path(uri)).build();
    }

    private static String path(UriInfo uri) {
        return uri == null ? null : uri.getRequestUri().getRawPath();
    }
}
