package io.delayq.security;

import java.util.HashMap;
import java.util.Map;

/** The embedded users of {@link SecuredProfile}, signing in to the dashboard with a login form; HTTP Basic kept for the API. */
public class FormLoginProfile extends SecuredProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
        Map<String, String> config = new HashMap<>(super.getConfigOverrides());
        config.put("quarkus.http.auth.form.enabled", "true");
        config.put("quarkus.http.auth.form.login-page", "/delayq/login.html");
        config.put("quarkus.http.auth.form.error-page", "/delayq/login.html?error");
        config.put("quarkus.http.auth.form.landing-page", "/delayq/test-dashboard");
        config.put("quarkus.http.auth.form.http-only-cookie", "true");
        config.put("quarkus.http.auth.basic", "true");
        config.put("quarkus.http.auth.session.encryption-key", "a-test-key-of-at-least-32-characters");
        return config;
    }
}
