package io.delayq.security;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Singleton;

import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.quarkus.runtime.LaunchMode;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.security.identity.IdentityProvider;

/**
 * Whether delayq's endpoints are open: they are when no credential of any kind is configured —
 * no {@code delayq.api.token}, no embedded user, no other identity provider — so that dev mode
 * and a first try need nothing. As soon as one is, every delayq request needs a role
 * ({@link AccessRules}). Decided once at start-up; a production start that is open says so.
 */
@Singleton
public class AccessMode {
    private static final Logger LOG = Logger.getLogger(AccessMode.class);
    private static final String ELYTRON = "io.quarkus.elytron.security.runtime.";
    /** Identity providers that supply no identity unless something else is configured (checked below). */
    private static final Set<String> INERT = Set.of("io.quarkus.security.runtime.AnonymousIdentityProvider",
            ApiTokenIdentityProvider.class.getName());

    private final List<String> credentials;

    AccessMode(DelayqConfig config, Instance<IdentityProvider<?>> providers) {
        this.credentials = credentials(config, providers, ConfigProvider.getConfig());
    }

    /** Whether every request to delayq's endpoints is allowed, credentials or not. */
    public boolean open() {
        return credentials.isEmpty();
    }

    void logAtStartup(@Observes StartupEvent event) {
        if (!open()) {
            LOG.debugf("delayq access control is on: %s", String.join(", ", credentials));
        } else if (LaunchMode.current() == LaunchMode.NORMAL) {
            LOG.warn("delayq's REST API and dashboard are OPEN to anyone who can reach them: no credential is "
                    + "configured (no delayq.api.token, no quarkus.security.users.embedded user, no other identity "
                    + "provider). Configure one to require the roles delayq-viewer, delayq-producer and delayq-operator.");
        } else {
            LOG.infof("delayq's REST API and dashboard are open (%s mode, no credential configured)",
                    LaunchMode.current().getDefaultProfile());
        }
    }

    /** What is configured that can authenticate a caller; empty when nothing is. */
    static List<String> credentials(DelayqConfig config, Instance<IdentityProvider<?>> providers, Config mp) {
        List<String> found = new ArrayList<>();
        if (config.api().token().filter(t -> !t.isBlank()).isPresent()) {
            found.add("delayq.api.token");
        }
        for (Instance.Handle<IdentityProvider<?>> h : providers.handles()) {
            String type = h.getBean().getBeanClass().getName();
            if (INERT.contains(type)) {
                continue;
            }
            if (type.startsWith(ELYTRON)) {
                // Elytron's providers are there as soon as a realm extension is; the properties-file
                // realm only authenticates once it has users.
                elytronRealms(mp).forEach(r -> {
                    if (!found.contains(r)) {
                        found.add(r);
                    }
                });
            } else if (type.equals("io.quarkus.security.runtime.X509IdentityProvider")) {
                String clientAuth = mp.getOptionalValue("quarkus.http.ssl.client-auth", String.class).orElse("none");
                if (!clientAuth.equalsIgnoreCase("none")) {
                    found.add("TLS client certificates");
                }
            } else {
                found.add("identity provider " + type);
            }
        }
        return found;
    }

    private static List<String> elytronRealms(Config mp) {
        List<String> realms = new ArrayList<>();
        if (enabled(mp, "quarkus.security.users.embedded.enabled") && hasEmbeddedUsers(mp)) {
            realms.add("embedded users");
        }
        if (enabled(mp, "quarkus.security.users.file.enabled")) {
            realms.add("users file");
        }
        if (enabled(mp, "quarkus.security.jdbc.enabled")) {
            realms.add("JDBC realm");
        }
        if (enabled(mp, "quarkus.security.ldap.enabled")) {
            realms.add("LDAP realm");
        }
        return realms;
    }

    private static boolean enabled(Config mp, String name) {
        return mp.getOptionalValue(name, Boolean.class).orElse(false);
    }

    private static boolean hasEmbeddedUsers(Config mp) {
        for (String name : mp.getPropertyNames()) {
            String n = name.toLowerCase(Locale.ROOT).replace('_', '.');
            if (n.startsWith("quarkus.security.users.embedded.users.")
                    && mp.getOptionalValue(name, String.class).filter(v -> !v.isBlank()).isPresent()) {
                return true;
            }
        }
        return false;
    }
}
