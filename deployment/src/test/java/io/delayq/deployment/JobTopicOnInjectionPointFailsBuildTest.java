package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Event;
import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.quarkus.test.QuarkusUnitTest;

/** {@code @JobTopic} on an injection point (firing jobs by hand would skip Redis): a build error. */
class JobTopicOnInjectionPointFailsBuildTest {
    @RegisterExtension
    static final QuarkusUnitTest app = BuildErrors.expect(App.class, App.class.getName() + "#<init>",
            "not observed");

    @ApplicationScoped
    static class App {
        final Event<Job> jobs;

        @Inject
        App(@JobTopic("order-close") Event<Job> jobs) {
            this.jobs = jobs;
        }
    }

    @Test
    void buildFailsNamingTheCulprit() {
        fail("the build should have failed");
    }
}
