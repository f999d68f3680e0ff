package io.delayq.outbox.deployment;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.core.IfExists;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.Jobs;
import io.delayq.core.ReactiveJobs;
import io.quarkus.test.QuarkusUnitTest;

/**
 * After-commit, the extension's default with a transaction manager (here Narayana, which this
 * module's tests have; no datasource is used): an enqueue inside a transaction is sent when it
 * commits, in the order it was made, and dropped when it rolls back; one whose send fails at the
 * commit is retried until Redis is back. (Lives with the outbox's tests because this module has
 * Narayana on its test classpath; the extension's own deployment tests build without it.)
 */
class AfterCommitTest {
    private static final String REDIS = "after-commit";

    @RegisterExtension
    static final QuarkusUnitTest app = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClasses(Orders.class, OwnRedis.class))
            .overrideConfigKey("quarkus.datasource.devservices.enabled", "false")
            .overrideConfigKey("quarkus.http.test-port", "0")
            .overrideConfigKey("quarkus.redis.hosts", OwnRedis.uri(REDIS));

    private static final Duration LONG = Duration.ofSeconds(60);
    private static final String TOPIC = "after-commit"; // no observer: jobs stay scheduled, readable

    @ApplicationScoped
    static class Orders {
        @Inject
        Jobs jobs;

        @Inject
        ReactiveJobs reactive;

        /** An enqueue, then a replace of it, in one transaction: what the caller gets inside. */
        @Transactional
        List<JobInfo> placeAndMove(String id) {
            JobInfo first = jobs.schedule(JobRequest.topic(TOPIC).id(id).payload("first").delay(Duration.ofHours(1)));
            JobInfo moved = reactive.schedule(JobRequest.topic(TOPIC).id(id).payload("second").delay(Duration.ofHours(2))
                    .ifExists(IfExists.REPLACE)).await().atMost(LONG);
            assertTrue(jobs.get(TOPIC, id).isEmpty(), "nothing is in Redis before the commit");
            return List.of(first, moved);
        }

        @Transactional
        JobInfo place(String id) {
            return jobs.schedule(JobRequest.topic(TOPIC).id(id).delay(Duration.ofHours(1)));
        }

        @Transactional
        void placeThenFail(String id) {
            jobs.schedule(JobRequest.topic(TOPIC).id(id).delay(Duration.ofHours(1)));
            throw new IllegalStateException("rolled back");
        }
    }

    @Inject
    Orders orders;

    @Inject
    Jobs jobs;

    @Test
    void sentAtTheCommitInOrderAndDroppedAtARollback() {
        List<JobInfo> inside = orders.placeAndMove("order-1");
        assertTrue(inside.stream().allMatch(JobInfo::pendingCommit), inside.toString());
        Optional<JobInfo> job = jobs.get(TOPIC, "order-1");
        assertEquals(JobState.SCHEDULED, job.orElseThrow().state(), "sent when the transaction committed");
        assertEquals(inside.get(1).runAt().toEpochMilli(), job.get().runAt().toEpochMilli(), 60_000,
                "the replace, made second, applied second");

        assertThrows(IllegalStateException.class, () -> orders.placeThenFail("order-2"));
        assertTrue(jobs.get(TOPIC, "order-2").isEmpty());

        // Outside a transaction: at once, as always.
        assertEquals(JobState.SCHEDULED, jobs.schedule(JobRequest.topic(TOPIC).id("order-3").delay(Duration.ofHours(1))).state());
    }

    @Test
    void aSendThatFailsAtTheCommitIsRetriedUntilRedisIsBack() {
        OwnRedis.kill(REDIS);
        try {
            assertTrue(orders.place("order-4").pendingCommit()); // commits; the send fails
        } finally {
            OwnRedis.start(REDIS);
        }
        await().atMost(LONG).ignoreExceptions().until(() -> jobs.get(TOPIC, "order-4").isPresent());
    }
}
