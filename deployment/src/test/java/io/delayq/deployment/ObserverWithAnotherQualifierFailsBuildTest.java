package io.delayq.deployment;

import static java.lang.annotation.ElementType.PARAMETER;
import static java.lang.annotation.RetentionPolicy.RUNTIME;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.annotation.Retention;
import java.lang.annotation.Target;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Qualifier;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.quarkus.test.QuarkusUnitTest;

/**
 * An observer that delayq's event would not reach (an extra qualifier) would have its topic
 * served and its jobs acked without running: a build error, naming the method.
 */
class ObserverWithAnotherQualifierFailsBuildTest {
    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClasses(App.class, Urgent.class))
            .overrideConfigKey("delayq.devservices.enabled", "false")
            .assertException(t -> BuildErrors.assertMessages(t, App.class.getName() + "#close", "Urgent",
                    "would never be called"));

    @Qualifier
    @Retention(RUNTIME)
    @Target(PARAMETER)
    @interface Urgent {
    }

    @ApplicationScoped
    static class App {
        void close(@Observes @JobTopic("order-close") @Urgent Job job) {
        }
    }

    @Test
    void buildFailsNamingTheCulprit() {
        fail("the build should have failed");
    }
}
