package io.delayq.security;

import java.util.Map;

import io.quarkus.test.junit.QuarkusTestProfile;

/**
 * Embedded users with each of delayq's roles (and one with none) over HTTP Basic, plus the API
 * token: access control is on.
 */
public class SecuredProfile implements QuarkusTestProfile {
    public static final String TOKEN = "t0ken-for-tests";

    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.ofEntries(Map.entry("quarkus.security.users.embedded.plain-text", "true"),
                Map.entry("quarkus.security.users.embedded.users.viewer", "v-pass"),
                Map.entry("quarkus.security.users.embedded.roles.viewer", "delayq-viewer"),
                Map.entry("quarkus.security.users.embedded.users.producer", "p-pass"),
                Map.entry("quarkus.security.users.embedded.roles.producer", "delayq-producer"),
                Map.entry("quarkus.security.users.embedded.users.operator", "o-pass"),
                Map.entry("quarkus.security.users.embedded.roles.operator", "delayq-operator"),
                Map.entry("quarkus.security.users.embedded.users.stranger", "s-pass"),
                Map.entry("quarkus.security.users.embedded.roles.stranger", "billing"),
                // A role of another name, mapped to delayq's (as one would map an identity provider's groups).
                Map.entry("quarkus.security.users.embedded.users.mapped", "m-pass"),
                Map.entry("quarkus.security.users.embedded.roles.mapped", "ops-team"),
                Map.entry("quarkus.http.auth.roles-mapping.ops-team", "delayq-producer"),
                Map.entry("delayq.api.token", TOKEN));
    }
}
