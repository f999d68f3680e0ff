package io.delayq.security;

import io.quarkus.security.identity.request.BaseAuthenticationRequest;

/** A bearer value presented as {@code delayq.api.token}, for {@link ApiTokenIdentityProvider} to check. */
public class ApiTokenRequest extends BaseAuthenticationRequest {
    private final String token;

    public ApiTokenRequest(String token) {
        this.token = token;
    }

    public String token() {
        return token;
    }
}
