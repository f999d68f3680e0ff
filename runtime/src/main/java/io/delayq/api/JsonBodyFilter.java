package io.delayq.api;

import java.util.Optional;
import java.util.Set;

import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

import org.jboss.resteasy.reactive.server.ServerRequestFilter;
import org.jboss.resteasy.reactive.server.SimpleResourceInfo;

/**
 * A request body to delayq's API must be {@code application/json}: anything else is a 415 problem,
 * before anything is read or written. Besides saying early what is wrong, this closes the API to
 * the one kind of cross-site request a browser sends without asking the server first (a form or
 * {@code text/plain} POST). A request without a body (requeue, trigger) is taken whatever its
 * Content-Type says: many clients name one for an empty POST.
 */
public class JsonBodyFilter {
    private static final Set<String> WITH_BODY = Set.of("POST", "PUT", "PATCH");

    @ServerRequestFilter
    public Optional<Response> check(ContainerRequestContext ctx, SimpleResourceInfo resource) {
        // Only delayq's API: the service's own resources (and the dashboard's forms) have their own rules.
        if (resource == null || resource.getResourceClass() == null
                || !resource.getResourceClass().getPackageName().equals(JsonBodyFilter.class.getPackageName())
                || !WITH_BODY.contains(ctx.getMethod()) || !hasBody(ctx)) {
            return Optional.empty();
        }
        MediaType type = ctx.getMediaType();
        if (type != null && type.isCompatible(MediaType.APPLICATION_JSON_TYPE) && !type.isWildcardType()
                && !type.isWildcardSubtype()) {
            return Optional.empty();
        }
        return Optional.of(Problem.response(415, "the request body must be application/json"
                + (type == null ? " (no Content-Type was given)" : " (was " + type + ")"), HttpHeaders.CONTENT_TYPE,
                ctx.getUriInfo().getRequestUri().getRawPath()).build());
    }

    private static boolean hasBody(ContainerRequestContext ctx) {
        String length = ctx.getHeaderString(HttpHeaders.CONTENT_LENGTH);
        if (length != null) {
            return !length.trim().equals("0");
        }
        return ctx.getHeaderString("Transfer-Encoding") != null;
    }
}
