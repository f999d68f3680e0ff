package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.quarkus.test.QuarkusUnitTest;

/** An observer of Job without @JobTopic would receive every topic's jobs: a build error. */
class ObserverWithoutTopicFailsBuildTest {
    @RegisterExtension
    static final QuarkusUnitTest app = BuildErrors.expect(App.class, App.class.getName() + "#all", "has no @JobTopic");

    @ApplicationScoped
    static class App {
        void all(@Observes Job job) {
        }
    }

    @Test
    void buildFailsNamingTheCulprit() {
        fail("the build should have failed");
    }
}
