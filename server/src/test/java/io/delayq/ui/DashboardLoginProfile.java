package io.delayq.ui;

import java.util.HashMap;
import java.util.Map;

import io.delayq.security.FormLoginProfile;

/** Embedded users with delayq's roles signing in to the dashboard through its login page (form authentication). */
public class DashboardLoginProfile extends FormLoginProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
        Map<String, String> config = new HashMap<>(super.getConfigOverrides());
        config.put("quarkus.http.auth.form.landing-page", "/delayq");
        return config;
    }
}
