package io.delayq.outbox.deployment;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;

import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.logging.Logger;

import io.delayq.dev.PostgresProcess;
import io.quarkus.datasource.common.runtime.DataSourceUtil;
import io.quarkus.datasource.common.runtime.DatabaseKind;
import io.quarkus.datasource.deployment.spi.DefaultDataSourceDbKindBuildItem;
import io.quarkus.datasource.runtime.DataSourceBuildTimeConfig;
import io.quarkus.datasource.runtime.DataSourcesBuildTimeConfig;
import io.quarkus.deployment.IsDevServicesSupportedByLaunchMode;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.builditem.DevServicesResultBuildItem;
import io.quarkus.deployment.builditem.DockerStatusBuildItem;
import io.quarkus.deployment.builditem.LaunchModeBuildItem;
import io.quarkus.deployment.dev.devservices.DevServicesConfig;
import io.quarkus.deployment.pkg.builditem.CurateOutcomeBuildItem;
import io.quarkus.runtime.LaunchMode;
import io.quarkus.runtime.configuration.ConfigUtils;

/**
 * The outbox's container-free PostgreSQL in dev mode: when the outbox's datasource (the default
 * one, or {@code delayq.outbox.datasource}) is a PostgreSQL that names no server
 * ({@code jdbc.url} unset) and Quarkus' own datasource Dev Service will not start one (it needs a
 * container runtime), start Debian's server on a free loopback port and hand its URL and user to
 * the application. Test mode is left alone: tests configure their own server, and a test that
 * forgot would better fail than quietly get one.
 */
class OutboxDevServicesProcessor {
    private static final Logger LOG = Logger.getLogger(OutboxDevServicesProcessor.class);

    /**
     * Whether to start the server; if not, why ({@code <ds>} stands for the datasource's property
     * prefix), and whether that is worth a warning (the user is left without a database).
     */
    record Decision(boolean start, boolean warn, String reason) {
        static final Decision START = new Decision(true, false, "");

        static Decision no(String reason) {
            return new Decision(false, false, reason);
        }
    }

    @BuildStep(onlyIf = { IsDevServicesSupportedByLaunchMode.class, DevServicesConfig.Enabled.class })
    DevServicesResultBuildItem localPostgres(OutboxBuildConfig config, LaunchModeBuildItem launchMode,
            DataSourcesBuildTimeConfig dataSources, List<DefaultDataSourceDbKindBuildItem> defaultDbKinds,
            CurateOutcomeBuildItem curate, DockerStatusBuildItem docker) {
        if (launchMode.getLaunchMode() != LaunchMode.DEVELOPMENT || !config.devservices().enabled()) {
            return null;
        }
        String name = ConfigProvider.getConfig().getOptionalValue("delayq.outbox.datasource", String.class)
                .orElse(DataSourceUtil.DEFAULT_DATASOURCE_NAME);
        DataSourceBuildTimeConfig ds = dataSources.dataSources().get(name);
        Optional<String> dbKind = ds == null ? Optional.empty()
                : DefaultDataSourceDbKindBuildItem.resolve(ds.dbKind(), defaultDbKinds, DataSourceUtil.isDefault(name), curate);
        Optional<Boolean> quarkusDevService = ds == null ? Optional.empty() : ds.devservices().enabled();
        Decision decision = decide(dbKind, ConfigUtils.isAnyPropertyPresent(DataSourceUtil.dataSourcePropertyKeys(name, "jdbc.url")),
                quarkusDevService, docker::isContainerRuntimeAvailable, PostgresProcess.binDir().isPresent());
        String prefix = DataSourceUtil.dataSourcePropertyKey(name, "");
        if (!decision.start()) {
            if (decision.warn()) {
                LOG.warnf("delayq outbox Dev Service: %s", decision.reason().replace("<ds>", prefix));
            } else {
                LOG.debugf("delayq outbox Dev Service not started: %s", decision.reason().replace("<ds>", prefix));
            }
            return null;
        }
        String user = ConfigProvider.getConfig().getOptionalValue(prefix + "username", String.class).orElse("app");
        return DevServicesResultBuildItem.owned()
                .feature("delayq-outbox")
                .serviceName("postgresql")
                // Compared between live reloads: the same datasource and user keep the same server.
                .serviceConfig(name + "/" + user)
                .startable(() -> new LocalPostgresDevService(user))
                .configProvider(Map.of(
                        prefix + "jdbc.url", LocalPostgresDevService::getConnectionInfo,
                        prefix + "username", s -> user,
                        // The cluster trusts local connections: any password is accepted.
                        prefix + "password", s -> ""))
                .build();
    }

    /**
     * Whether the outbox's PostgreSQL is started: a PostgreSQL datasource, no URL, Quarkus' own
     * Dev Service turned off (or left on but without a container runtime, where it only warns), and
     * the server's binaries found (else a warning says what to install or set: the build goes on,
     * and the datasource's own error follows at start).
     */
    static Decision decide(Optional<String> dbKind, boolean urlSet, Optional<Boolean> quarkusDevService,
            BooleanSupplier containerRuntime, boolean binaries) {
        if (dbKind.isEmpty() || !DatabaseKind.isPostgreSQL(dbKind.get())) {
            return Decision.no("the outbox's datasource is not a PostgreSQL (" + dbKind.orElse("no db-kind") + ")");
        }
        if (urlSet) {
            return Decision.no("<ds>jdbc.url is set");
        }
        if (quarkusDevService.orElse(true) && containerRuntime.getAsBoolean()) {
            return Decision.no("Quarkus' PostgreSQL Dev Service starts a container for it");
        }
        if (!binaries) {
            return new Decision(false, true, "no PostgreSQL server to start (initdb and postgres on PATH or under"
                    + " /usr/lib/postgresql/*/bin): install Debian's (apt-get install -y postgresql), or set <ds>jdbc.url to a PostgreSQL of yours");
        }
        return Decision.START;
    }
}
