package io.delayq.deployment;

import io.quarkus.runtime.annotations.ConfigPhase;
import io.quarkus.runtime.annotations.ConfigRoot;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;

/**
 * delayq settings fixed when the application is built (a different value at run time has no
 * effect, and start-up logs a warning saying so). The runtime settings are in
 * {@code io.delayq.core.DelayqConfig}, under the same prefix.
 */
@ConfigMapping(prefix = "delayq")
@ConfigRoot(phase = ConfigPhase.BUILD_TIME)
public interface DelayqBuildConfig {

    /** The REST API ({@code /jobs}, {@code /topics}). */
    Api api();

    /** The container-free Redis that dev and test mode start. */
    DevServices devservices();

    /** The operators' dashboard ({@code /delayq}). */
    Ui ui();

    interface Ui {
        /**
         * Whether the service serves delayq's dashboard at {@code /delayq}: topics, their
         * timelines, jobs in flight and dead, with actions. Default true.
         */
        @WithDefault("true")
        boolean enabled();
    }

    interface Api {
        /**
         * Whether the service exposes delayq's REST API ({@code /jobs}, {@code /topics}). A
         * service that only schedules with {@code Jobs} and runs observers can turn it off; the
         * build fails when one of the service's own resources claims those paths while it is on.
         * Default true.
         */
        @WithDefault("true")
        boolean enabled();
    }

    interface DevServices {
        /**
         * Whether dev and test mode start a local {@code redis-server} (the one on PATH, else the
         * binary carried by embedded-redis; no container) when {@code quarkus.redis.hosts} is not
         * set. It is shared across live reloads and across the test classes of one run, and
         * stopped at the end. Default true.
         */
        @WithDefault("true")
        boolean enabled();
    }
}
