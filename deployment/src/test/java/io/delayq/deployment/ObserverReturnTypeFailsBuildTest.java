package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.quarkus.test.QuarkusUnitTest;

/** An observer returning anything but void, Uni or CompletionStage: nothing would wait for it. */
class ObserverReturnTypeFailsBuildTest {
    @RegisterExtension
    static final QuarkusUnitTest app = BuildErrors.expect(App.class, App.class.getName() + "#close",
            "returns java.lang.String", "returns void, or Uni<Void> or CompletionStage<Void>");

    @ApplicationScoped
    static class App {
        String close(@Observes @JobTopic("order-close") Job job) {
            return "done";
        }
    }

    @Test
    void buildFailsNamingTheCulprit() {
        fail("the build should have failed");
    }
}
