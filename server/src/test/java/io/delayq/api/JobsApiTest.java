package io.delayq.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.delayq.core.InvalidJobException;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.store.Inspection;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;

@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
class JobsApiTest {
    @Inject
    Jobs jobs;
    @Inject
    Inspection store;

    @Test
    void scheduleWithDelayStoresThePayloadAsJson() {
        String topic = Topics.fresh("java");
        JobInfo info = jobs.schedule(topic, Map.of("order", 42), Duration.ofMinutes(30));
        assertTrue(info.created());
        JobInfo read = store.get(topic, info.id()).orElseThrow();
        assertEquals(JobState.SCHEDULED, read.state());
        assertEquals(info.runAt(), read.runAt());
        assertTrue(info.id().matches("[A-Za-z0-9]{16}"), info.id());
    }

    @Test
    void requestBuilderIsIdempotentOnItsId() {
        String topic = Topics.fresh("java");
        Instant at = Instant.now().plusSeconds(3600).truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
        JobInfo first = jobs.schedule(JobRequest.topic(topic).id("order-42").payload("p").runAt(at).maxAttempts(3));
        JobInfo again = jobs.schedule(JobRequest.topic(topic).id("order-42").payload("q").runAt(at.plusSeconds(60)));
        assertTrue(first.created());
        assertFalse(again.created());
        assertEquals(at, again.runAt());
        assertEquals(3, store.get(topic, "order-42").orElseThrow().maxAttempts());
    }

    @Test
    void brokenRulesThrowNamingTheField() {
        InvalidJobException e = assertThrows(InvalidJobException.class,
                () -> jobs.schedule(JobRequest.topic("ok").delay(Duration.ofMillis(-1))));
        assertEquals("delayMs", e.field());
        e = assertThrows(InvalidJobException.class,
                () -> jobs.schedule(JobRequest.topic("ok").delay(Duration.ofSeconds(1)).runAt(Instant.now())));
        assertEquals("runAt", e.field());
        e = assertThrows(InvalidJobException.class, () -> jobs.schedule("No", null, Duration.ZERO));
        assertEquals("topic", e.field());
    }
}
