package io.delayq.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Optional;

import jakarta.inject.Singleton;

import io.delayq.core.DelayqConfig;
import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.identity.AuthenticationRequestContext;
import io.quarkus.security.identity.IdentityProvider;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.security.runtime.QuarkusPrincipal;
import io.quarkus.security.runtime.QuarkusSecurityIdentity;
import io.smallrye.mutiny.Uni;

/**
 * Checks {@code delayq.api.token}: the one who holds it is an operator (principal
 * {@code delayq-api-token}). Fails for any other value, and always when no token is configured.
 */
@Singleton
public class ApiTokenIdentityProvider implements IdentityProvider<ApiTokenRequest> {
    /** The principal name of a caller authenticated by the token. */
    public static final String PRINCIPAL = "delayq-api-token";
    private final Optional<byte[]> token;

    ApiTokenIdentityProvider(DelayqConfig config) {
        this.token = config.api().token().filter(t -> !t.isBlank()).map(t -> t.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public Class<ApiTokenRequest> getRequestType() {
        return ApiTokenRequest.class;
    }

    @Override
    public Uni<SecurityIdentity> authenticate(ApiTokenRequest request, AuthenticationRequestContext context) {
        // Constant-time comparison: the reply time must not tell how much of the token matched.
        if (token.isPresent() && MessageDigest.isEqual(request.token().getBytes(StandardCharsets.UTF_8), token.get())) {
            return Uni.createFrom().item(QuarkusSecurityIdentity.builder().setPrincipal(new QuarkusPrincipal(PRINCIPAL))
                    .addRole(DelayqRole.OPERATOR.roleName()).build());
        }
        return Uni.createFrom().failure(new AuthenticationFailedException("not the delayq API token"));
    }
}
