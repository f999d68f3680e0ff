package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.ObservesAsync;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.quarkus.test.QuarkusUnitTest;
import io.smallrye.mutiny.Uni;

/** Reactive observers that delayq could not call as such: asynchronous, or private. */
class ReactiveObserverMisdeclaredFailsBuildTest {
    @RegisterExtension
    static final QuarkusUnitTest app = BuildErrors.expect(App.class,
            App.class.getName() + "#closeAsync returns io.smallrye.mutiny.Uni<java.lang.Void> and uses @ObservesAsync",
            App.class.getName() + "#remindPrivately returns java.util.concurrent.CompletionStage<java.lang.Void> and is private");

    @ApplicationScoped
    static class App {
        Uni<Void> closeAsync(@ObservesAsync @JobTopic("order-close") Job job) {
            return Uni.createFrom().voidItem();
        }

        private CompletionStage<Void> remindPrivately(@Observes @JobTopic("reminder") Job job) {
            return CompletableFuture.completedFuture(null);
        }
    }

    @Test
    void buildFailsNamingEachCulprit() {
        fail("the build should have failed");
    }
}
