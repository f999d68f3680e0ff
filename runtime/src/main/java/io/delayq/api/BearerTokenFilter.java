package io.delayq.api;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Optional;

import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.Response;

import org.jboss.resteasy.reactive.server.ServerRequestFilter;
import org.jboss.resteasy.reactive.server.SimpleResourceInfo;

import io.delayq.core.DelayqConfig;

/**
 * With {@code delayq.api.token} set, mutating calls (POST, PUT, PATCH, DELETE) need
 * {@code Authorization: Bearer <token>}; reads stay open for dashboards and probes.
 */
public class BearerTokenFilter {
    private final Optional<byte[]> token;

    public BearerTokenFilter(DelayqConfig config) {
        this.token = config.api().token().filter(t -> !t.isBlank()).map(t -> t.getBytes(StandardCharsets.UTF_8));
    }

    @ServerRequestFilter
    public Optional<Response> check(ContainerRequestContext ctx, SimpleResourceInfo resource) {
        // Only delayq's own endpoints: the service's own resources keep their own access rules.
        if (token.isEmpty() || resource == null || resource.getResourceClass() == null
                || !resource.getResourceClass().getPackageName().startsWith("io.delayq.")) {
            return Optional.empty();
        }
        String method = ctx.getMethod();
        if ("GET".equals(method) || "HEAD".equals(method) || "OPTIONS".equals(method)) {
            return Optional.empty();
        }
        String header = ctx.getHeaderString(HttpHeaders.AUTHORIZATION);
        byte[] given = header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)
                ? header.substring(7).trim().getBytes(StandardCharsets.UTF_8)
                : new byte[0];
        // Constant-time comparison: the reply time must not tell how much of the token matched.
        if (MessageDigest.isEqual(given, token.get())) {
            return Optional.empty();
        }
        return Optional.of(Problem.response(401,
                header == null ? "Authorization: Bearer <token> is required" : "the bearer token is not valid",
                "Authorization", ctx.getUriInfo().getRequestUri().getRawPath())
                .header(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"delayq\"").build());
    }
}
