package io.delayq.security;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.Response;

import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;
import org.jboss.resteasy.reactive.server.SimpleResourceInfo;

import io.delayq.api.Problem;
import io.delayq.core.DelayqConfig;

/**
 * Refuses requests to delayq's REST API and dashboard whose {@code Host} is not a name delayq
 * answers to ({@code delayq.http.allowed-hosts}). Against DNS rebinding: a page on
 * {@code evil.example} makes its name resolve to this server, and the visitor's browser, which
 * then deems the server the page's own origin, sends it same-origin requests (the cross-site check
 * passes them) and reads the answers. Only the {@code Host} still says which name was asked for.
 * <p>
 * IP addresses always pass: a page cannot own an address' origin. Without the setting the
 * defaults ({@code localhost}, its subdomains, {@code quarkus.http.host}) are checked only while
 * delayq's endpoints are open ({@link AccessMode}): with a credential configured, a rebinding page
 * has none to send, and a deployment reached by its service name keeps working as it was.
 * <p>
 * Application-scoped, not a singleton: REST filters are instantiated at static init, before the
 * runtime configuration it reads exists; the client proxy defers that to the first request.
 */
@ApplicationScoped
public class AllowedHosts {
    private final List<String> allowed;
    private final boolean always;
    private final AccessMode access;

    AllowedHosts(DelayqConfig config, AccessMode access) {
        this.access = access;
        this.always = config.http().allowedHosts().isPresent();
        this.allowed = names(config.http().allowedHosts(),
                ConfigProvider.getConfig().getOptionalValue("quarkus.http.host", String.class));
    }

    static List<String> names(Optional<List<String>> set, Optional<String> httpHost) {
        List<String> names = new ArrayList<>();
        if (set.isPresent()) {
            set.get().forEach(n -> names.add(n.trim().toLowerCase(Locale.ROOT)));
        } else {
            names.add("localhost");
            names.add(".localhost");
            httpHost.map(h -> h.trim().toLowerCase(Locale.ROOT)).filter(h -> !h.isEmpty() && !names.contains(h))
                    .ifPresent(names::add);
        }
        return List.copyOf(names);
    }

    @ServerRequestFilter
    public Optional<Response> check(ContainerRequestContext ctx, SimpleResourceInfo resource) {
        if (resource == null || resource.getResourceClass() == null
                || !resource.getResourceClass().getPackageName().startsWith("io.delayq.")
                || !always && !access.open()) {
            return Optional.empty();
        }
        // The request URI's host is the Host header's (or, behind a proxy with
        // quarkus.http.proxy.enable-forwarded-host, the forwarded one).
        String host = ctx.getUriInfo().getRequestUri().getHost();
        if (allows(allowed, host)) {
            return Optional.empty();
        }
        return Optional.of(Problem.response(403, "Host " + host + " is not one of delayq.http.allowed-hosts " + allowed
                + " (a page that points its own name at this server, DNS rebinding, is refused this way); reach delayq by an "
                + "allowed name or an IP address, or add this name to delayq.http.allowed-hosts", null,
                ctx.getUriInfo().getRequestUri().getRawPath()).build());
    }

    /** Whether {@code host} (no port; an IPv6 address in brackets or not) is an IP address or an allowed name. */
    static boolean allows(List<String> allowed, String host) {
        if (host == null || host.isEmpty()) {
            return false; // HTTP/1.1 requires a Host; only a hand-made request lacks it
        }
        String h = host.toLowerCase(Locale.ROOT);
        if (h.endsWith(".")) {
            h = h.substring(0, h.length() - 1); // "localhost." is "localhost"
        }
        if (isIpAddress(h)) {
            return true;
        }
        for (String a : allowed) {
            if (a.equals("*") || a.equals(h) || a.startsWith(".") && (h.endsWith(a) || h.equals(a.substring(1)))
                    || a.startsWith("*.") && (h.endsWith(a.substring(1)) || h.equals(a.substring(2)))) {
                return true;
            }
        }
        return false;
    }

    static boolean isIpAddress(String h) {
        if (h.startsWith("[") || h.indexOf(':') >= 0) {
            return true; // IPv6: a name has no colon
        }
        String[] parts = h.split("\\.", -1);
        if (parts.length != 4) {
            return false;
        }
        for (String p : parts) {
            if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(Character::isDigit) || Integer.parseInt(p) > 255) {
                return false;
            }
        }
        return true;
    }
}
