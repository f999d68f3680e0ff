package io.delayq.outbox.deployment;

import io.quarkus.runtime.annotations.ConfigPhase;
import io.quarkus.runtime.annotations.ConfigRoot;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;

/**
 * Outbox settings fixed when the application is built. The runtime settings are in
 * {@code io.delayq.outbox.OutboxConfig}, under the same prefix.
 */
@ConfigMapping(prefix = "delayq.outbox")
@ConfigRoot(phase = ConfigPhase.BUILD_TIME)
public interface OutboxBuildConfig {

    /** The container-free PostgreSQL that dev mode starts for the outbox's datasource. */
    DevServices devservices();

    interface DevServices {
        /**
         * Whether dev mode (not tests, not prod) starts a local PostgreSQL (Debian's binaries:
         * {@code initdb} on PATH or under /usr/lib/postgresql/N/bin; no container) for the
         * outbox's datasource when it is a PostgreSQL with no {@code jdbc.url} and Quarkus' own
         * datasource Dev Service will not start (turned off with
         * {@code quarkus.datasource.devservices.enabled=false}, or no container runtime). Its
         * cluster is a fresh one in a temporary directory, kept across live reloads and removed
         * when dev mode ends. Default true.
         */
        @WithDefault("true")
        boolean enabled();
    }
}
