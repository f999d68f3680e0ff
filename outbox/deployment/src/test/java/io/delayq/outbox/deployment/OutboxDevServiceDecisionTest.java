package io.delayq.outbox.deployment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

import io.delayq.outbox.deployment.OutboxDevServicesProcessor.Decision;

/** When dev mode starts the outbox's own PostgreSQL (plain JUnit: the decision, no application). */
class OutboxDevServiceDecisionTest {
    private static final Optional<String> PG = Optional.of("postgresql");

    @Test
    void startsForAPostgresqlWithoutUrlWhenQuarkusDevServiceIsOff() {
        assertTrue(OutboxDevServicesProcessor.decide(PG, false, Optional.of(false), () -> true, true).start());
    }

    @Test
    void startsWhenQuarkusDevServiceIsLeftOnButNoContainerRuntimeIsThere() {
        assertTrue(OutboxDevServicesProcessor.decide(PG, false, Optional.empty(), () -> false, true).start());
        assertTrue(OutboxDevServicesProcessor.decide(Optional.of("pgsql"), false, Optional.empty(), () -> false, true).start());
    }

    @Test
    void leavesItToQuarkusWhenItsDevServiceCanStartAContainer() {
        Decision d = OutboxDevServicesProcessor.decide(PG, false, Optional.of(true), () -> true, true);
        assertFalse(d.start());
        assertFalse(d.warn());
    }

    @Test
    void notStartedWhenAUrlIsSetOrTheDatabaseIsNotPostgresql() {
        assertFalse(OutboxDevServicesProcessor.decide(PG, true, Optional.of(false), () -> false, true).start());
        assertFalse(OutboxDevServicesProcessor.decide(Optional.of("h2"), false, Optional.of(false), () -> false, true).start());
        assertFalse(OutboxDevServicesProcessor.decide(Optional.empty(), false, Optional.of(false), () -> false, true).start());
    }

    @Test
    void withoutTheServerBinariesItWarnsWhatToInstallOrSetAndDoesNotStart() {
        Decision d = OutboxDevServicesProcessor.decide(PG, false, Optional.of(false), () -> false, false);
        assertFalse(d.start());
        assertTrue(d.warn());
        assertTrue(d.reason().contains("apt-get install -y postgresql"), d.reason());
        assertTrue(d.reason().contains("<ds>jdbc.url"), d.reason());
    }

    @Test
    void noContainerProbeWhenQuarkusDevServiceIsTurnedOff() {
        // The probe makes Testcontainers look for Docker (and log errors when there is none).
        boolean[] probed = { false };
        OutboxDevServicesProcessor.decide(PG, false, Optional.of(false), () -> probed[0] = true, true);
        assertEquals(false, probed[0]);
    }
}
