package io.delayq.security;

import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.Response;

import org.jboss.resteasy.reactive.server.ServerRequestFilter;
import org.jboss.resteasy.reactive.server.core.CurrentRequestManager;
import org.jboss.resteasy.reactive.server.core.ResteasyReactiveRequestContext;

import io.quarkus.security.identity.CurrentIdentityAssociation;
import io.smallrye.mutiny.Uni;

/**
 * {@code OPTIONS} under the same rules as {@code GET} (a viewer's). RESTEasy answers an
 * {@code OPTIONS} with {@code Allow} by itself, without calling a resource method, so the access
 * policy on delayq's resource classes never sees it: an anonymous caller got 200 and the methods
 * of a path where every other request of theirs got 401. This filter runs before matching, on the
 * paths of delayq's resources ({@link #ROOTS}: a new resource class with a new first path segment
 * adds it there; {@code OptionsAccessTest} checks that none is missing).
 * <p>
 * Application-scoped: filters are made at static init, before the configuration that
 * {@link AccessMode} reads exists; the client proxy defers it to the first request.
 */
@ApplicationScoped
public class OptionsAccess {
    /** The first path segment of each of delayq's resources, relative to the REST root. */
    static final Set<String> ROOTS = Set.of("jobs", "topics", "schedules", "history", "delayq", "batches");

    @Inject
    AccessMode access;
    @Inject
    CurrentIdentityAssociation identity;

    @ServerRequestFilter(preMatching = true)
    public Uni<Response> check(ContainerRequestContext ctx) {
        if (!"OPTIONS".equals(ctx.getMethod()) || access.open()) {
            return Uni.createFrom().nullItem();
        }
        ResteasyReactiveRequestContext rest = CurrentRequestManager.get();
        String path = rest != null ? rest.getPathWithoutPrefix() : ctx.getUriInfo().getPath();
        if (!ROOTS.contains(firstSegment(path))) {
            return Uni.createFrom().nullItem();
        }
        String instance = ctx.getUriInfo().getRequestUri().getRawPath();
        return identity.getDeferredIdentity().map(id -> {
            if (id.isAnonymous()) {
                return AccessProblems.unauthorized(instance);
            }
            return DelayqRole.of(id).filter(r -> r.includes(AccessRules.required("OPTIONS", path))).isPresent() ? null
                    : AccessProblems.forbidden(instance);
        });
    }

    public static String firstSegment(String path) {
        int i = 0;
        while (i < path.length() && path.charAt(i) == '/') {
            i++;
        }
        int end = path.length();
        for (char c : new char[] { '/', ';' }) { // "/jobs;x=1/..." is /jobs to the router
            int at = path.indexOf(c, i);
            if (at >= 0 && at < end) {
                end = at;
            }
        }
        return path.substring(i, end);
    }
}
