package io.delayq.outbox.deployment;

import java.nio.file.Path;

import io.delayq.dev.PostgresProcess;
import io.quarkus.test.QuarkusUnitTest;

/**
 * A PostgreSQL server of the tests' own ({@link PostgresProcess}: Debian's binaries, .ci/run
 * installs them), started on first use, stopped and removed when the JVM exits. Found again through system properties, as a test class
 * is loaded twice (by JUnit and by the test application's class loader); {@link #stop} and
 * {@link #start} restart it on the same port and data.
 */
final class OwnPostgres {
    private static final String PREFIX = "dqtest.pg.";

    private OwnPostgres() {
    }

    /** The JDBC URL of the server (database {@code postgres}, user {@code app}, no password), started on first use. */
    static synchronized String jdbcUrl() {
        if (System.getProperty(PREFIX + "port") == null) {
            PostgresProcess pg = PostgresProcess.startEphemeral();
            System.setProperty(PREFIX + "dir", pg.dir().toString());
            System.setProperty(PREFIX + "port", Integer.toString(pg.port()));
            Runtime.getRuntime().addShutdownHook(new Thread(pg::close));
        }
        return "jdbc:postgresql://127.0.0.1:" + System.getProperty(PREFIX + "port") + "/postgres";
    }

    /**
     * {@code app} with the server as its default datasource (started on first use), the Dev
     * Service off, and a random HTTP port.
     */
    static QuarkusUnitTest datasource(QuarkusUnitTest app) {
        return app.overrideConfigKey("quarkus.datasource.db-kind", "postgresql")
                .overrideConfigKey("quarkus.datasource.jdbc.url", jdbcUrl())
                .overrideConfigKey("quarkus.datasource.username", "app")
                .overrideConfigKey("quarkus.datasource.devservices.enabled", "false")
                .overrideConfigKey("quarkus.http.test-port", "0");
    }

    /** Starts the server (again) and waits until it accepts connections. */
    static synchronized void start() {
        server().start();
    }

    /** Stops the server at once (PostgreSQL's fast shutdown, every session cut) and waits until it is gone. */
    static synchronized void stop() {
        if (System.getProperty(PREFIX + "dir") != null) {
            server().stop();
        }
    }

    private static PostgresProcess server() {
        return PostgresProcess.of(Path.of(System.getProperty(PREFIX + "dir")), Integer.parseInt(System.getProperty(PREFIX + "port")));
    }
}
