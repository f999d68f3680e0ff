package io.delayq.deployment;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.Dependent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.delayq.core.JobRequest;
import io.delayq.core.JobTopic;
import io.delayq.core.ReactiveJobs;
import io.delayq.dispatch.TopicRegistry;
import io.quarkus.test.QuarkusUnitTest;
import io.smallrye.mutiny.Uni;

/**
 * An application's reactive observers (a {@code @Dependent} bean's {@code Uni} observer with an
 * injected parameter, an {@code @ApplicationScoped} bean's {@code CompletionStage} one) are built
 * into invokers and serve their topics, on the Dev Service's Redis.
 */
class ReactiveObserversServeTheirTopicsTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClasses(Closer.class, Reminder.class, Clock.class));

    static final List<String> CLOSED = new CopyOnWriteArrayList<>();
    static final List<String> REMINDED = new CopyOnWriteArrayList<>();

    @ApplicationScoped
    static class Clock {
        String now() {
            return "now";
        }
    }

    @Dependent
    static class Closer {
        Uni<Void> close(@Observes @JobTopic("invoice-close") Job job, Clock clock) {
            return Uni.createFrom().item(clock.now()).invoke(now -> CLOSED.add(job.id() + "@" + now)).replaceWithVoid();
        }
    }

    @ApplicationScoped
    static class Reminder {
        CompletionStage<Void> remind(@Observes @JobTopic("reminder") Job job) {
            return CompletableFuture.runAsync(() -> REMINDED.add(job.id()));
        }
    }

    @Inject
    ReactiveJobs jobs;

    @Inject
    TopicRegistry registry;

    @Test
    void bothTopicsAreServedAndEachObserverRunsOnce() {
        assertEquals(List.of("invoice-close", "reminder"), List.copyOf(registry.handlers().keySet()));
        assertEquals("observer " + Closer.class.getName() + "#close (reactive)", registry.handlers().get("invoice-close").describe());

        jobs.schedule(JobRequest.topic("invoice-close").id("inv-1")).await().atMost(Duration.ofSeconds(10));
        jobs.schedule(JobRequest.topic("reminder").id("rem-1")).await().atMost(Duration.ofSeconds(10));

        await().atMost(Duration.ofSeconds(10)).until(() -> CLOSED.contains("inv-1@now") && REMINDED.contains("rem-1"));
        assertEquals(List.of("inv-1@now"), CLOSED);
        assertEquals(List.of("rem-1"), REMINDED);
    }
}
