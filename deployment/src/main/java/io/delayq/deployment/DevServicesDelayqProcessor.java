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
        quietDockerProbe();
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

    /** Testcontainers' logger that prints "Could not find a valid Docker environment" as ERROR lines. */
    static final String DOCKER_PROBE_LOGGER = "org.testcontainers.dockerclient.DockerClientProviderStrategy";
    /** Held so that the level set on it stays (a logger nobody references may be collected). */
    private static java.util.logging.Logger quieted;

    /**
     * Quarkus describes every Dev Service, this container-free one too, with whether a container
     * runtime is available, and on a machine without one that probe makes Testcontainers log
     * "Could not find a valid Docker environment" as ERROR at every start: the first thing a
     * newcomer sees would look like a failure of delayq. So when nothing on this machine points to
     * a container runtime, that logger is silenced; wherever one may be, it is left alone (a Dev
     * Service of another extension that needs Docker still fails with Quarkus' own error).
     */
    static void quietDockerProbe() {
        if (containerRuntimeHinted(System.getenv(), System.getProperty("user.home"))) {
            return;
        }
        LOG.debugf("no container runtime here (no DOCKER_HOST, no docker or podman socket): %s silenced", DOCKER_PROBE_LOGGER);
        java.util.logging.Logger logger = java.util.logging.Logger.getLogger(DOCKER_PROBE_LOGGER);
        logger.setLevel(java.util.logging.Level.OFF);
        quieted = logger;
    }

    /** Whether anything points to a container runtime Testcontainers could use. */
    static boolean containerRuntimeHinted(Map<String, String> env, String home) {
        for (String name : new String[] { "DOCKER_HOST", "TESTCONTAINERS_DOCKER_SOCKET_OVERRIDE", "TESTCONTAINERS_HOST_OVERRIDE" }) {
            if (env.get(name) != null && !env.get(name).isBlank()) {
                return true;
            }
        }
        java.util.List<java.nio.file.Path> sockets = new java.util.ArrayList<>(java.util.List.of(
                java.nio.file.Path.of("/var/run/docker.sock"), java.nio.file.Path.of("/run/podman/podman.sock")));
        String runtimeDir = env.get("XDG_RUNTIME_DIR");
        if (runtimeDir != null && !runtimeDir.isBlank()) {
            sockets.add(java.nio.file.Path.of(runtimeDir, "docker.sock"));
            sockets.add(java.nio.file.Path.of(runtimeDir, "podman", "podman.sock"));
        }
        if (home != null) {
            sockets.add(java.nio.file.Path.of(home, ".docker", "run", "docker.sock"));
            sockets.add(java.nio.file.Path.of(home, ".colima", "default", "docker.sock"));
            sockets.add(java.nio.file.Path.of(home, ".rd", "docker.sock"));
            // A docker.host or a Testcontainers Cloud host configured there (Quarkus itself writes
            // the file, with testcontainers.reuse.enable only: that says nothing).
            java.nio.file.Path tc = java.nio.file.Path.of(home, ".testcontainers.properties");
            try {
                if (java.nio.file.Files.isReadable(tc) && java.nio.file.Files.readAllLines(tc).stream()
                        .map(String::strip).anyMatch(l -> l.startsWith("docker.host") || l.startsWith("tc.host")
                                || l.startsWith("docker.client.strategy"))) {
                    return true;
                }
            } catch (java.io.IOException e) {
                return true; // unreadable: assume it may configure one
            }
        }
        return sockets.stream().anyMatch(java.nio.file.Files::exists);
    }
}
