package io.delayq.ui;

import java.util.HashMap;
import java.util.Map;

import io.delayq.security.SecuredProfile;

/** Embedded users with delayq's roles signing in to the dashboard through its login page (form authentication). */
public class DashboardLoginProfile extends SecuredProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
        Map<String, String> config = new HashMap<>(super.getConfigOverrides());
        config.put("quarkus.http.auth.form.enabled", "true");
        config.put("quarkus.http.auth.form.login-page", "/delayq/login.html");
        config.put("quarkus.http.auth.form.error-page", "/delayq/login.html?error");
        config.put("quarkus.http.auth.form.landing-page", "/delayq");
        config.put("quarkus.http.auth.form.http-only-cookie", "true");
        config.put("quarkus.http.auth.basic", "true");
        config.put("quarkus.http.auth.session.encryption-key", "a-test-key-of-at-least-32-characters");
        return config;
    }
}
