package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.jboss.logging.MDC;
import org.junit.jupiter.api.Test;

import io.delayq.core.Job;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobSnoozedException;
import io.delayq.core.JobState;
import io.delayq.core.JobTopic;
import io.delayq.core.Jobs;
import io.delayq.core.PermanentJobFailureException;
import io.delayq.store.Inspection;
import io.delayq.support.RedisTestResource;
import io.delayq.support.StrictEventLoops;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.smallrye.common.vertx.VertxContext;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Context;
import io.vertx.core.Vertx;

/**
 * Observers that return {@code Uni} or {@code CompletionStage}: the attempt ends when that
 * completes (ack, retry, snooze, dead), called once, through its invoker, on a duplicated context.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(StrictEventLoops.class)
class ReactiveObserversTest {
    static final String UNI = "reactive-uni";
    static final String STAGE = "reactive-stage";
    static final String HANG = "reactive-hang";
    static final String UNI_RESULT = "reactive-result-uni";
    static final String STAGE_RESULT = "reactive-result-stage";

    /** One call of an observer, as it saw it. */
    record Call(int attempt, boolean eventLoop, boolean duplicatedContext, String mdcJobId, long atMs) {
    }

    /**
     * Play the payload, a list of steps, one per delivery, each after a timer (so the outcome
     * comes on an event loop, later): "ok" completes, "fail" fails, "after:N" snoozes N ms,
     * "permanent" fails for good; "throw" throws before returning, "null" returns null.
     */
    @ApplicationScoped
    public static class Observers {
        static final Map<String, List<Call>> CALLS = new ConcurrentHashMap<>();
        /** The job id in the MDC when the observer's timer fired: its continuation. */
        static final Map<String, List<String>> MDC_LATER = new ConcurrentHashMap<>();
        static final Map<String, Boolean> CANCELLED = new ConcurrentHashMap<>();

        Uni<Void> uni(@Observes @JobTopic(UNI) Job job, Vertx vertx) {
            String step = record(job);
            if (step.equals("throw")) {
                throw new IllegalStateException("thrown before returning a Uni");
            }
            if (step.equals("null")) {
                return null;
            }
            return Uni.createFrom().emitter(e -> vertx.setTimer(20, t -> play(job, step, () -> e.complete(null), e::fail)));
        }

        CompletionStage<Void> stage(@Observes @JobTopic(STAGE) Job job) {
            String step = record(job);
            CompletableFuture<Void> done = new CompletableFuture<>();
            Vertx.currentContext().owner().setTimer(20, t -> play(job, step, () -> done.complete(null), done::completeExceptionally));
            return done;
        }

        /** Sets its result on an event loop, later, then completes: {"via": "uni", "attempt": n}. */
        Uni<Void> uniResult(@Observes @JobTopic(UNI_RESULT) Job job, Vertx vertx) {
            return Uni.createFrom().emitter(e -> vertx.setTimer(20, t -> {
                job.result(Map.of("via", "uni", "attempt", job.attempt()));
                e.complete(null);
            }));
        }

        CompletionStage<Void> stageResult(@Observes @JobTopic(STAGE_RESULT) Job job) {
            CompletableFuture<Void> done = new CompletableFuture<>();
            Vertx.currentContext().owner().setTimer(20, t -> {
                job.result(List.of("via", "stage"));
                done.complete(null);
            });
            return done;
        }

        /** The first attempt never completes (until the attempt timeout cancels it); the next one does. */
        Uni<Void> hang(@Observes @JobTopic(HANG) Job job) {
            record(job);
            if (job.attempt() == 1) {
                return Uni.createFrom().<Void> nothing().onCancellation().invoke(() -> CANCELLED.put(job.id(), true));
            }
            return Uni.createFrom().voidItem();
        }

        private static String record(Job job) {
            List<Call> calls = CALLS.computeIfAbsent(job.id(), k -> new CopyOnWriteArrayList<>());
            calls.add(new Call(job.attempt(), Context.isOnEventLoopThread(), VertxContext.isOnDuplicatedContext(),
                    (String) MDC.get("delayq.jobId"), System.currentTimeMillis()));
            List<?> steps = job.payloadJson() == null ? List.of() : job.payload(List.class);
            int n = calls.size();
            return n <= steps.size() ? steps.get(n - 1).toString() : "ok";
        }

        private static void play(Job job, String step, Runnable complete, Consumer<Throwable> fail) {
            MDC_LATER.computeIfAbsent(job.id(), k -> new CopyOnWriteArrayList<>()).add(String.valueOf(MDC.get("delayq.jobId")));
            if (step.equals("fail")) {
                fail.accept(new IllegalStateException("planned failure of attempt " + job.attempt()));
            } else if (step.equals("permanent")) {
                fail.accept(new PermanentJobFailureException("order is gone"));
            } else if (step.startsWith("after:")) {
                try {
                    job.snooze(Duration.ofMillis(Long.parseLong(step.substring(6))));
                } catch (JobSnoozedException snoozed) {
                    fail.accept(snoozed);
                }
            } else {
                complete.run();
            }
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    Inspection store;
    @Inject
    TopicRegistry registry;

    private static String id(String what) {
        return DispatchTest.uid(what);
    }

    private List<Call> callsOnceGone(String topic, String id) {
        Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> store.get(topic, id).isEmpty());
        return Observers.CALLS.get(id);
    }

    private JobInfo deadOnceItIs(String topic, String id) {
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> store.get(topic, id).map(j -> j.state() == JobState.DEAD).orElse(false));
        return store.get(topic, id).orElseThrow();
    }

    @Test
    void aUniObserverIsAckedWhenItsUniCompletesAndCalledOnceOnADuplicatedContextWithItsJobInTheMdc() {
        String id = id("uni-ok");
        jobs.schedule(JobRequest.topic(UNI).id(id).payload(List.of("ok")));
        List<Call> calls = callsOnceGone(UNI, id);
        assertEquals(1, calls.size(), "called once (not also through a CDI event): " + calls);
        Call call = calls.get(0);
        assertTrue(call.eventLoop() && call.duplicatedContext(), "on a duplicated context of an event loop: " + call);
        assertEquals(id, call.mdcJobId());
        assertEquals(List.of(id), Observers.MDC_LATER.get(id), "the MDC follows the observer's continuation");
        assertEquals("observer " + Observers.class.getName() + "#uni (reactive)", registry.handlers().get(UNI).describe());
    }

    @Test
    void aFailedUniIsRetriedWithBackoffAndTheSecondAttemptCompletesTheJob() {
        String id = id("uni-retry");
        jobs.schedule(JobRequest.topic(UNI).id(id).payload(List.of("fail", "ok")).maxAttempts(3));
        List<Call> calls = callsOnceGone(UNI, id);
        assertEquals(List.of(1, 2), calls.stream().map(Call::attempt).toList());
    }

    @Test
    void aCompletionStageObserverIsAckedOnCompletionAndRetriedOnFailure() {
        String ok = id("stage-ok");
        String retried = id("stage-retry");
        jobs.schedule(JobRequest.topic(STAGE).id(ok).payload(List.of("ok")));
        jobs.schedule(JobRequest.topic(STAGE).id(retried).payload(List.of("fail", "ok")).maxAttempts(3));
        assertEquals(List.of(1), callsOnceGone(STAGE, ok).stream().map(Call::attempt).toList());
        assertEquals(List.of(1, 2), callsOnceGone(STAGE, retried).stream().map(Call::attempt).toList());
        assertTrue(Observers.CALLS.get(ok).get(0).duplicatedContext());
    }

    @Test
    void aSnoozeThroughAFailedUniRunsTheSameAttemptAgainLater() {
        String id = id("uni-snooze");
        // One attempt allowed: had the snooze counted as a failure, the job would be dead.
        jobs.schedule(JobRequest.topic(UNI).id(id).payload(List.of("after:400", "ok")).maxAttempts(1));
        List<Call> calls = callsOnceGone(UNI, id);
        assertEquals(List.of(1, 1), calls.stream().map(Call::attempt).toList());
        long gap = calls.get(1).atMs() - calls.get(0).atMs();
        assertTrue(gap >= 350, "ran again " + gap + " ms after a snooze of 400 ms");
    }

    @Test
    void aPermanentFailureThroughAFailedUniOrStageBuriesTheJobAtOnce() {
        for (String topic : List.of(UNI, STAGE)) {
            String id = id("permanent");
            jobs.schedule(JobRequest.topic(topic).id(id).payload(List.of("permanent")).maxAttempts(5));
            JobInfo dead = deadOnceItIs(topic, id);
            assertEquals(1, dead.attempts());
            assertEquals("io.delayq.core.PermanentJobFailureException: order is gone", dead.lastError());
            assertEquals(1, Observers.CALLS.get(id).size());
        }
    }

    @Test
    void aNullUniOrAThrowBeforeReturningFailsTheAttempt() {
        String nothing = id("uni-null");
        String thrown = id("uni-throw");
        jobs.schedule(JobRequest.topic(UNI).id(nothing).payload(List.of("null")).maxAttempts(1));
        jobs.schedule(JobRequest.topic(UNI).id(thrown).payload(List.of("throw")).maxAttempts(1));
        JobInfo dead = deadOnceItIs(UNI, nothing);
        // ArC's invoker (which releases what it looked up when the Uni ends) finds the null first.
        assertTrue(dead.attempts() == 1 && dead.lastError().contains("null"), dead.toString());
        assertEquals("java.lang.IllegalStateException: thrown before returning a Uni", deadOnceItIs(UNI, thrown).lastError());
    }

    @Test
    void aUniThatNeverCompletesIsCancelledAtTheAttemptTimeoutAndRetried() {
        String id = id("uni-hang");
        jobs.schedule(JobRequest.topic(HANG).id(id).maxAttempts(2));
        List<Call> calls = callsOnceGone(HANG, id);
        assertEquals(List.of(1, 2), calls.stream().map(Call::attempt).toList());
        assertEquals(Boolean.TRUE, Observers.CANCELLED.get(id), "the first attempt's subscription was cancelled");
    }

    @Test
    void aResultSetBeforeAUniOrAStageCompletesIsKeptWithTheSucceededJob() {
        String uni = id("uni-result"), stage = id("stage-result");
        jobs.schedule(JobRequest.topic(UNI_RESULT).id(uni));
        jobs.schedule(JobRequest.topic(STAGE_RESULT).id(stage));
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> store.get(UNI_RESULT, uni).map(j -> j.state() == JobState.SUCCEEDED).orElse(false));
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> store.get(STAGE_RESULT, stage).map(j -> j.state() == JobState.SUCCEEDED).orElse(false));
        JobInfo u = store.get(UNI_RESULT, uni).orElseThrow();
        assertEquals(1, u.attempts());
        assertNotNull(u.finishedAt());
        String json = u.result();
        assertTrue(json.equals("{\"via\":\"uni\",\"attempt\":1}") || json.equals("{\"attempt\":1,\"via\":\"uni\"}"), json);
        assertEquals("[\"via\",\"stage\"]", store.get(STAGE_RESULT, stage).orElseThrow().result());
    }
}
