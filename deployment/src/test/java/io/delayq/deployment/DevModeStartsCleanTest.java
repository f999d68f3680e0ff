package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.quarkus.test.QuarkusDevModeTest;

/**
 * Dev mode of a service with the extension, on a machine without a container runtime (as this
 * one, and CI, are): its start logs no ERROR, in particular not Testcontainers' "Could not find a
 * valid Docker environment" that Quarkus' description of the Dev Services used to provoke.
 */
class DevModeStartsCleanTest {
    @RegisterExtension
    static final QuarkusDevModeTest app = new QuarkusDevModeTest()
            .withApplicationRoot(jar -> jar.addClasses(Pings.class))
            .setLogRecordPredicate(r -> true);

    @ApplicationScoped
    static class Pings {
        void ping(@Observes @JobTopic("ping") Job job) {
        }
    }

    @Test
    void noErrorIsLoggedAtStartWithoutDocker() {
        // Only meaningful where nothing points to a container runtime: elsewhere the probe may pass.
        org.junit.jupiter.api.Assumptions.assumeFalse(
                DevServicesDelayqProcessor.containerRuntimeHinted(System.getenv(), System.getProperty("user.home")),
                "a container runtime is configured here");
        List<LogRecord> records = app.getLogRecords();
        assertTrue(records.stream().anyMatch(r -> String.valueOf(r.getMessage()).contains("started in")
                || String.valueOf(r.getMessage()).contains("Installed features")), "the start was logged: " + records.size());
        List<String> errors = records.stream().filter(r -> r.getLevel().intValue() >= Level.SEVERE.intValue())
                .map(r -> r.getLoggerName() + ": " + r.getMessage()).toList();
        assertEquals(List.of(), errors, "ERROR lines at dev-mode start");
    }
}
