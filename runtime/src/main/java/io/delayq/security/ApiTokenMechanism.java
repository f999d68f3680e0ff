package io.delayq.security;

import java.util.Set;

import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.identity.IdentityProviderManager;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.security.identity.request.AuthenticationRequest;
import io.quarkus.vertx.http.runtime.security.ChallengeData;
import io.quarkus.vertx.http.runtime.security.HttpAuthenticationMechanism;
import io.quarkus.vertx.http.runtime.security.HttpSecurityUtils;
import io.smallrye.mutiny.Uni;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;

/**
 * Reads {@code Authorization: Bearer <value>} and has {@link ApiTokenIdentityProvider} check it
 * against {@code delayq.api.token}. A value that is not the token is left alone (no identity, no
 * failure): the service may have another bearer mechanism (OIDC, JWT) for which it is a valid
 * token, and without one the caller is anonymous and gets delayq's 401.
 * <p>
 * Registered by {@link AccessConfigurer} only when the token is set, and programmatically rather
 * than as a bean: a mechanism bean would displace Quarkus' default HTTP Basic mechanism, which
 * embedded users need.
 */
public class ApiTokenMechanism implements HttpAuthenticationMechanism {
    /** Before OIDC's bearer mechanism (default priority), which would fail a request with our token. */
    static final int PRIORITY = DEFAULT_PRIORITY + 500;
    private static final String BEARER = "bearer ";

    @Override
    public Uni<SecurityIdentity> authenticate(RoutingContext context, IdentityProviderManager identityProviderManager) {
        String header = context.request().getHeader(HttpHeaders.AUTHORIZATION);
        if (header == null || !header.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
            return Uni.createFrom().nullItem();
        }
        ApiTokenRequest request = new ApiTokenRequest(header.substring(BEARER.length()).trim());
        return identityProviderManager.authenticate(HttpSecurityUtils.setRoutingContextAttribute(request, context))
                .onFailure(AuthenticationFailedException.class).recoverWithNull();
    }

    /** None of its own: the other mechanisms' challenge stands; delayq's 401 adds {@code Bearer realm="delayq"}. */
    @Override
    public Uni<ChallengeData> getChallenge(RoutingContext context) {
        return Uni.createFrom().nullItem();
    }

    @Override
    public Set<Class<? extends AuthenticationRequest>> getCredentialTypes() {
        return Set.of(ApiTokenRequest.class);
    }

    @Override
    public int getPriority() {
        return PRIORITY;
    }
}
