package io.delayq.deployment;

import java.util.Map;

import org.jboss.logging.Logger;

import io.quarkus.deployment.IsDevServicesSupportedByLaunchMode;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.builditem.DevServicesResultBuildItem;
import io.quarkus.deployment.builditem.LaunchModeBuildItem;
import io.quarkus.deployment.dev.devservices.DevServicesConfig;
import io.quarkus.runtime.LaunchMode;
import io.quarkus.runtime.configuration.ConfigUtils;

/**
 * The container-free Redis Dev Service: in dev and test mode, when the service names no Redis
 * ({@code quarkus.redis.hosts} and {@code quarkus.redis.hosts-provider-name} unset), start a
 * local {@code redis-server} and hand its address to the application as
 * {@code quarkus.redis.hosts}. Quarkus' Dev Services registry owns it: it is reused across
 * live reloads and across test classes while this configuration is unchanged, and closed at
 * the end of the run.
 */
class DevServicesDelayqProcessor {
    private static final Logger LOG = Logger.getLogger(DevServicesDelayqProcessor.class);

    /** What makes two starts the same service (compared between reloads and test classes). */
    record ServiceConfig(boolean persistent) {
    }

    @BuildStep(onlyIf = { IsDevServicesSupportedByLaunchMode.class, DevServicesConfig.Enabled.class })
    DevServicesResultBuildItem localRedis(DelayqBuildTimeConfig config, LaunchModeBuildItem launchMode) {
        if (!config.devservices().enabled()) {
            LOG.debug("delayq Dev Service off (delayq.devservices.enabled=false)");
            return null;
        }
        if (ConfigUtils.isPropertyNonEmpty("quarkus.redis.hosts")
                || ConfigUtils.isPropertyNonEmpty("quarkus.redis.hosts-provider-name")) {
            LOG.debug("delayq Dev Service not started: the service configures its Redis");
            return null;
        }
        boolean persistent = launchMode.getLaunchMode() == LaunchMode.DEVELOPMENT;
        return DevServicesResultBuildItem.owned()
                .feature(DelayqProcessor.FEATURE)
                .serviceName("redis")
                .serviceConfig(new ServiceConfig(persistent))
                .startable(() -> new LocalRedisDevService(persistent))
                .configProvider(Map.of("quarkus.redis.hosts", LocalRedisDevService::getConnectionInfo))
                .build();
    }
}
