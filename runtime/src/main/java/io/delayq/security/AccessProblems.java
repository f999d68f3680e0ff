package io.delayq.security;

import java.util.concurrent.CompletableFuture;

import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.Response;

import io.delayq.api.Problem;
import io.delayq.core.DelayqConfig;
import io.quarkus.arc.Arc;
import io.quarkus.vertx.http.runtime.CurrentVertxRequest;
import io.quarkus.vertx.http.runtime.security.ChallengeData;
import io.quarkus.vertx.http.runtime.security.HttpAuthenticator;
import io.vertx.ext.web.RoutingContext;

/**
 * The replies to a request the access rules refuse: 401 with the challenge of the service's
 * mechanisms (and {@code Bearer realm="delayq"} when the API token is on) for a caller without
 * credentials, 403 naming the role for one without the role — both problem bodies. A dashboard
 * page ({@code /delayq}) answers a missing sign-in the way the mechanism asks, a redirect to the
 * login form or the OIDC provider included.
 */
public final class AccessProblems {
    private AccessProblems() {
    }

    /** No (valid) credentials. */
    public static Response unauthorized(String instance) {
        RoutingContext rc = routingContext();
        ChallengeData challenge = rc == null ? null : challenge(rc);
        String path = rc == null ? "" : DelayqAccessPolicy.path(rc);
        if (challenge != null && challenge.status / 100 == 3 && path.startsWith("/delayq")) {
            Response.ResponseBuilder redirect = Response.status(challenge.status);
            challenge.getHeaders().forEach((name, value) -> redirect.header(name.toString(), value));
            return redirect.build();
        }
        Response.ResponseBuilder b = Problem.response(401,
                "authentication required: this request needs role " + required(rc, path).roleName() + " or above",
                HttpHeaders.AUTHORIZATION, instance);
        boolean bearer = false;
        if (challenge != null && challenge.status == 401) {
            for (var h : challenge.getHeaders().entrySet()) {
                b.header(h.getKey().toString(), h.getValue());
                bearer |= h.getValue().regionMatches(true, 0, "Bearer", 0, 6);
            }
        }
        if (!bearer && tokenConfigured()) {
            b.header(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"delayq\"");
        }
        return b.build();
    }

    /** Authenticated, without the role. */
    public static Response forbidden(String instance) {
        RoutingContext rc = routingContext();
        String path = rc == null ? "" : DelayqAccessPolicy.path(rc);
        return Problem.response(403, "this request needs role " + required(rc, path).roleName() + " or above", null,
                instance).build();
    }

    private static DelayqRole required(RoutingContext rc, String path) {
        return rc == null ? DelayqRole.OPERATOR : AccessRules.required(rc.request().method().name(), path);
    }

    private static RoutingContext routingContext() {
        var current = Arc.container().instance(CurrentVertxRequest.class);
        return current.isAvailable() ? current.get().getCurrent() : null;
    }

    /**
     * The challenge Quarkus would send (the first mechanism, by priority, that has one). Only a
     * challenge at hand is used: Basic's, form login's and a bearer mechanism's are; one that would
     * need I/O first is not waited for on the event loop.
     */
    private static ChallengeData challenge(RoutingContext rc) {
        HttpAuthenticator authenticator = rc.get(HttpAuthenticator.class.getName());
        if (authenticator == null) {
            var bean = Arc.container().instance(HttpAuthenticator.class);
            if (!bean.isAvailable()) {
                return null;
            }
            authenticator = bean.get();
        }
        CompletableFuture<ChallengeData> c = authenticator.getChallenge(rc).subscribeAsCompletionStage();
        try {
            return c.getNow(null);
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static boolean tokenConfigured() {
        var config = Arc.container().instance(DelayqConfig.class);
        return config.isAvailable() && config.get().api().token().filter(t -> !t.isBlank()).isPresent();
    }
}
