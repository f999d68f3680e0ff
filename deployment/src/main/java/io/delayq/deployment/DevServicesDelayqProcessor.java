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
 * {@code quarkus.redis.hosts}. It is reused across live reloads and across the test classes
 * (and test profiles) of one run, and stopped when the JVM ends (see {@link LocalRedisDevService}).
 */
class DevServicesDelayqProcessor {
    private static final Logger LOG = Logger.getLogger(DevServicesDelayqProcessor.class);

    @BuildStep(onlyIf = { IsDevServicesSupportedByLaunchMode.class, DevServicesConfig.Enabled.class })
    DevServicesResultBuildItem localRedis(DelayqBuildConfig config, LaunchModeBuildItem launchMode) {
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
                // What makes two starts the same service, compared between live reloads and test
                // applications: a JDK type, because each application has its own class loader.
                .serviceConfig(persistent ? "persistent" : "ephemeral")
                .startable(() -> new LocalRedisDevService(persistent))
                .configProvider(Map.of("quarkus.redis.hosts", LocalRedisDevService::getConnectionInfo))
                .build();
    }
}
