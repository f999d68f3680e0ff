package io.delayq.security;

import jakarta.inject.Singleton;

import org.jboss.resteasy.reactive.server.core.CurrentRequestManager;
import org.jboss.resteasy.reactive.server.core.ResteasyReactiveRequestContext;

import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.vertx.http.runtime.security.HttpSecurityPolicy;
import io.smallrye.mutiny.Uni;
import io.vertx.ext.web.RoutingContext;

/**
 * The Quarkus HTTP security policy of delayq's endpoints, applied to each of delayq's REST
 * resources with {@code @AuthorizationPolicy(name = DelayqAccessPolicy.NAME)}: permits a request
 * whose identity holds the role {@link AccessRules} asks for (or a role above it), or any request
 * when {@link AccessMode} says nothing is configured. A denied anonymous caller gets 401, a denied
 * authenticated one 403 (see {@link AccessProblems}).
 * <p>
 * Being applied per resource rather than by path, it leaves the service's own endpoints alone,
 * and follows {@code quarkus.http.root-path} and {@code quarkus.rest.path} by itself.
 */
@Singleton
public class DelayqAccessPolicy implements HttpSecurityPolicy {
    /** The name {@code @AuthorizationPolicy} refers to. */
    public static final String NAME = "delayq";
    private final AccessMode mode;

    DelayqAccessPolicy(AccessMode mode) {
        this.mode = mode;
    }

    @Override
    public Uni<CheckResult> checkPermission(RoutingContext request, Uni<SecurityIdentity> identity,
            AuthorizationRequestContext requestContext) {
        if (mode.open()) {
            return CheckResult.permit();
        }
        DelayqRole required = AccessRules.required(request.request().method().name(), path(request));
        return identity.map(id -> DelayqRole.of(id).filter(held -> held.includes(required)).isPresent()
                ? CheckResult.PERMIT
                : CheckResult.DENY);
    }

    @Override
    public String name() {
        return NAME;
    }

    /** The path relative to the REST root, as the rules are written. */
    static String path(RoutingContext request) {
        ResteasyReactiveRequestContext rest = CurrentRequestManager.get();
        return rest != null ? rest.getPathWithoutPrefix() : request.normalizedPath();
    }
}
