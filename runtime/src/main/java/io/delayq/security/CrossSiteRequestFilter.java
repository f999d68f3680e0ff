package io.delayq.security;

import java.net.URI;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.Response;

import org.jboss.resteasy.reactive.server.ServerRequestFilter;
import org.jboss.resteasy.reactive.server.SimpleResourceInfo;

import io.delayq.api.Problem;

/**
 * Refuses state-changing requests to delayq's endpoints that a browser sends on behalf of another
 * site (cross-site request forgery: a page elsewhere posting a form to the dashboard or the API,
 * riding on the signed-in user's cookie or remembered Basic credentials).
 * <p>
 * It asks the browser rather than a token: modern browsers say where a request comes from in
 * {@code Sec-Fetch-Site} (anything but {@code same-origin}, or {@code none} for one the user typed,
 * is refused) and, on every POST, in {@code Origin} (which must be this host). A request with
 * neither is not from a browser (curl, a service) and passes, as does one carrying a bearer token,
 * which browsers never add by themselves. So a dashboard form or htmx call on the same origin
 * needs nothing extra. Safe methods are never refused: they change nothing.
 */
public class CrossSiteRequestFilter {
    private static final Set<String> SAFE = Set.of("GET", "HEAD", "OPTIONS");

    @ServerRequestFilter
    public Optional<Response> check(ContainerRequestContext ctx, SimpleResourceInfo resource) {
        if (resource == null || resource.getResourceClass() == null
                || !resource.getResourceClass().getPackageName().startsWith("io.delayq.")
                || SAFE.contains(ctx.getMethod())) {
            return Optional.empty();
        }
        String refused = refusal(ctx);
        return refused == null ? Optional.empty()
                : Optional.of(Problem.response(403, refused, null, ctx.getUriInfo().getRequestUri().getRawPath()).build());
    }

    /** Why the request is refused, or null when it may go on. */
    static String refusal(ContainerRequestContext ctx) {
        String auth = ctx.getHeaderString(HttpHeaders.AUTHORIZATION);
        if (auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return null;
        }
        String site = ctx.getHeaderString("Sec-Fetch-Site");
        if (site != null) {
            String s = site.trim().toLowerCase(Locale.ROOT);
            return s.equals("same-origin") || s.equals("none") ? null
                    : "cross-site request refused: Sec-Fetch-Site is " + site + "; use the dashboard on this origin, or "
                            + "call the API from outside a browser";
        }
        String origin = ctx.getHeaderString("Origin");
        if (origin == null) {
            return null;
        }
        return sameOrigin(origin, ctx.getUriInfo().getRequestUri()) ? null
                : "cross-site request refused: Origin " + origin + " is not this host";
    }

    private static boolean sameOrigin(String origin, URI target) {
        try {
            URI o = URI.create(origin.trim());
            return o.getScheme() != null && o.getHost() != null && o.getHost().equalsIgnoreCase(target.getHost())
                    && port(o) == port(target);
        } catch (IllegalArgumentException e) {
            return false; // "null" (an opaque origin: a sandboxed frame, a file) and garbage
        }
    }

    private static int port(URI u) {
        if (u.getPort() != -1) {
            return u.getPort();
        }
        return "https".equalsIgnoreCase(u.getScheme()) ? 443 : 80;
    }
}
