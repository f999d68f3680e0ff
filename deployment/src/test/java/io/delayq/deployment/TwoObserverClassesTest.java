package io.delayq.deployment;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.delayq.core.JobRequest;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.delayq.dispatch.TopicRegistry;
import io.quarkus.test.QuarkusUnitTest;

/**
 * An application with two observer classes serves both topics, on the Redis the Dev Service
 * started (no {@code quarkus.redis.hosts} is set).
 */
class TwoObserverClassesTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClasses(Invoices.class, Reminders.class));

    static final List<String> INVOICES = new CopyOnWriteArrayList<>();
    static final List<String> REMINDERS = new CopyOnWriteArrayList<>();

    @ApplicationScoped
    static class Invoices {
        void send(@Observes @JobTopic("invoice-send") Job job) {
            INVOICES.add(job.id());
        }
    }

    @ApplicationScoped
    static class Reminders {
        void remind(@Observes @JobTopic("reminder") Job job) {
            REMINDERS.add(job.id());
        }
    }

    @Inject
    Jobs jobs;

    @Inject
    TopicRegistry registry;

    @Test
    void bothTopicsAreServedAndEachObserverGetsItsOwnJobs() {
        assertEquals(List.of("invoice-send", "reminder"), List.copyOf(registry.handlers().keySet()));
        assertEquals("observer " + Invoices.class.getName() + "#send", registry.handlers().get("invoice-send").describe());

        jobs.schedule(JobRequest.topic("invoice-send").id("inv-1").delay(Duration.ZERO));
        jobs.schedule(JobRequest.topic("reminder").id("rem-1").delay(Duration.ofMillis(200)));

        await().atMost(Duration.ofSeconds(10)).until(() -> INVOICES.contains("inv-1") && REMINDERS.contains("rem-1"));
        assertEquals(List.of("inv-1"), INVOICES);
        assertEquals(List.of("rem-1"), REMINDERS);
    }
}
