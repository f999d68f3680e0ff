package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.quarkus.test.QuarkusUnitTest;
import io.smallrye.mutiny.Uni;

/**
 * A reactive observer is called through its invoker, the others through a CDI event that would
 * call it too: a topic with a reactive observer has no other.
 */
class ReactiveObserverSharingItsTopicFailsBuildTest {
    @RegisterExtension
    static final QuarkusUnitTest app = BuildErrors.expect(App.class, "topic order-close has a reactive observer ("
            + App.class.getName() + "#closeLater) and other observers (" + App.class.getName() + "#audit)",
            "must be its topic's only observer");

    @ApplicationScoped
    static class App {
        Uni<Void> closeLater(@Observes @JobTopic("order-close") Job job) {
            return Uni.createFrom().voidItem();
        }

        void audit(@Observes @JobTopic("order-close") Job job) {
        }
    }

    @Test
    void buildFailsNamingBothObservers() {
        fail("the build should have failed");
    }
}
