package io.delayq.outbox.deployment;

import java.nio.file.Path;

import org.jboss.logging.Logger;

import io.delayq.dev.PostgresProcess;
import io.quarkus.deployment.builditem.Startable;

/**
 * The outbox's dev-mode PostgreSQL: Debian's server as a child process on a free loopback port
 * ({@link PostgresProcess}), a fresh cluster in a temporary directory, no container.
 * <p>
 * One server lives as long as the dev-mode JVM: a shutdown hook stops it and removes its
 * directory. A live reload loads this class anew and may close the previous instance, so the
 * server is found again through system properties (outside any configuration prefix) and
 * {@link #close} leaves it running: the service's rows survive reloads, as the Redis Dev
 * Service's jobs do.
 */
final class LocalPostgresDevService implements Startable {
    private static final Logger LOG = Logger.getLogger(LocalPostgresDevService.class);
    private static final String DIR = "io.delayq.devservice.postgres.dir";
    private static final String PORT = "io.delayq.devservice.postgres.port";
    private static final String USER = "io.delayq.devservice.postgres.user";
    private final String user;
    private String url;

    LocalPostgresDevService(String user) {
        this.user = user;
    }

    @Override
    public void start() {
        synchronized (System.getProperties()) {
            String dir = System.getProperty(DIR);
            if (dir != null && user.equals(System.getProperty(USER))) {
                PostgresProcess running = PostgresProcess.of(Path.of(dir), Integer.parseInt(System.getProperty(PORT)));
                if (ProcessHandle.of(running.pid()).map(ProcessHandle::isAlive).orElse(false)) {
                    url = running.jdbcUrl();
                    LOG.infof("delayq outbox Dev Service: reusing PostgreSQL at %s", url);
                    return;
                }
            }
            PostgresProcess pg = PostgresProcess.startEphemeral(user);
            Runtime.getRuntime().addShutdownHook(new Thread(pg::close, "delayq-dev-postgres-stop"));
            System.setProperty(DIR, pg.dir().toString());
            System.setProperty(PORT, Integer.toString(pg.port()));
            System.setProperty(USER, user);
            url = pg.jdbcUrl();
            LOG.infof("delayq outbox Dev Service: %s (%s) at %s, user %s, data in %s (removed at exit);"
                    + " set quarkus.datasource.jdbc.url to use another database", PostgresProcess.describe(),
                    PostgresProcess.binDir().map(Path::toString).orElse("?"), url, user, pg.dir());
        }
    }

    @Override
    public String getConnectionInfo() {
        return url;
    }

    @Override
    public String getContainerId() {
        return null;
    }

    /** Nothing to do: the server outlives the application and stops with the JVM (see above). */
    @Override
    public void close() {
    }
}
