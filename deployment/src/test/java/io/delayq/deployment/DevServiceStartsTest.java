package io.delayq.deployment;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.quarkus.test.QuarkusUnitTest;

/**
 * With no Redis configured, test mode gets the Dev Service's local redis-server, and it is the
 * one the application is pointed at.
 */
class DevServiceStartsTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClasses(Pings.class));

    static final AtomicInteger PINGS = new AtomicInteger();

    @ApplicationScoped
    static class Pings {
        void ping(@Observes @JobTopic("ping") Job job) {
            PINGS.incrementAndGet();
        }
    }

    @Inject
    Jobs jobs;

    @Test
    void aLocalRedisIsStartedAndJobsRunOnIt() {
        String uri = ConfigProvider.getConfig().getValue("quarkus.redis.hosts", String.class);
        jobs.schedule("ping", null, Duration.ZERO);
        await().atMost(Duration.ofSeconds(10)).until(() -> PINGS.get() == 1);
        assertTrue(uri.matches("redis://127\\.0\\.0\\.1:\\d+"), uri);
    }
}
