package io.delayq.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.inject.Inject;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.core.CancelOutcome;
import io.delayq.core.InvalidJobException;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobState;
import io.delayq.core.ReactiveJobs;
import io.delayq.dev.Resp;
import io.delayq.store.StoreUnavailableException;
import io.delayq.support.RedisTestResource;
import io.delayq.support.StrictEventLoops;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Context;
import io.vertx.core.Vertx;

/**
 * {@link ReactiveJobs} from event loops: thousands of concurrent enqueues all land, and no event
 * loop is held (Vert.x' blocked-thread checker, set to 500 ms, reports nothing); broken rules and
 * an absent Redis fail the {@code Uni}.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(StrictEventLoops.class)
class ReactiveJobsTest {

    /** A reactive endpoint, as a service would write one: Quarkus REST runs it on an event loop. */
    @Path("/test/reactive-jobs")
    @io.quarkus.vertx.http.security.AuthorizationPolicy(name = io.delayq.security.DelayqAccessPolicy.NAME)
    public static class Endpoint {
        static final AtomicInteger ON_EVENT_LOOP = new AtomicInteger();
        static final AtomicInteger ELSEWHERE = new AtomicInteger();

        @Inject
        ReactiveJobs jobs;

        @POST
        @Path("{topic}/{id}")
        public Uni<JobInfo> schedule(@PathParam("topic") String topic, @PathParam("id") String id) {
            (Context.isOnEventLoopThread() ? ON_EVENT_LOOP : ELSEWHERE).incrementAndGet();
            return jobs.schedule(JobRequest.topic(topic).id(id).payload(Map.of("n", id)).delay(Duration.ofHours(1)));
        }
    }

    @Inject
    ReactiveJobs reactive;
    @Inject
    Vertx vertx;
    @TestHTTPResource("/test/reactive-jobs/")
    URL endpoint;

    /** Subscribes on an event loop and waits (here, on the test thread) for the outcome. */
    private <T> T onEventLoop(java.util.function.Supplier<Uni<T>> call) throws Exception {
        CompletableFuture<T> out = new CompletableFuture<>();
        vertx.getOrCreateContext().runOnContext(v -> {
            if (!Context.isOnEventLoopThread()) {
                out.completeExceptionally(new AssertionError("not on an event loop"));
                return;
            }
            call.get().subscribe().with(out::complete, out::completeExceptionally);
        });
        try {
            return out.get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception x ? x : e;
        }
    }

    private static long hlen(String topic) {
        try (Resp r = RedisTestResource.resp()) {
            return r.num("HLEN", Topics.keys(topic) + "jobs");
        }
    }

    @Test
    void theBlockedThreadCheckerReportsAnEventLoopHeldPastTheLimit() throws Exception {
        // The control of the load test below: it would find nothing if the checker said nothing.
        StrictEventLoops.clearWarnings();
        CompletableFuture<Void> released = new CompletableFuture<>();
        vertx.getOrCreateContext().runOnContext(v -> {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (StrictEventLoops.warnings().isEmpty() && System.nanoTime() < deadline) {
                Thread.onSpinWait(); // held until the checker reports it
            }
            released.complete(null);
        });
        released.get(20, TimeUnit.SECONDS);
        assertTrue(StrictEventLoops.warnings().stream().anyMatch(w -> w.contains("blocked")), StrictEventLoops.warnings().toString());
    }

    @Test
    void thousandsOfConcurrentEnqueuesFromEventLoopsAllLandAndHoldNoEventLoop() throws Exception {
        String topic = Topics.fresh("reactive-load");
        int n = 2500;
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        // Warm up first (class loading on the first call), then watch.
        assertEquals(200, client.send(post(topic, "warm"), HttpResponse.BodyHandlers.discarding()).statusCode());
        StrictEventLoops.clearWarnings();
        int before = Endpoint.ON_EVENT_LOOP.get();
        Semaphore inFlight = new Semaphore(128);
        List<CompletableFuture<HttpResponse<String>>> replies = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            inFlight.acquire();
            replies.add(client.sendAsync(post(topic, "j" + i), HttpResponse.BodyHandlers.ofString())
                    .whenComplete((r, e) -> inFlight.release()));
        }
        CompletableFuture.allOf(replies.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        for (CompletableFuture<HttpResponse<String>> reply : replies) {
            HttpResponse<String> r = reply.get();
            assertEquals(200, r.statusCode(), r.body());
            assertTrue(r.body().contains("\"state\":\"scheduled\""), r.body());
        }
        assertEquals(0, Endpoint.ELSEWHERE.get(), "the endpoint ran off the event loop");
        assertEquals(n, Endpoint.ON_EVENT_LOOP.get() - before);
        assertEquals(n + 1, hlen(topic), "every job is in Redis");
        assertEquals(List.of(), StrictEventLoops.warnings(), "an event loop was held");
    }

    private HttpRequest post(String topic, String id) {
        return HttpRequest.newBuilder(URI.create(endpoint + topic + "/" + id)).POST(HttpRequest.BodyPublishers.noBody())
                .build();
    }

    @Test
    void getAndCancelRunOnAnEventLoop() throws Exception {
        String topic = Topics.fresh("reactive-cancel");
        JobInfo scheduled = onEventLoop(() -> reactive.schedule(topic, Map.of("order", 42), Duration.ofMinutes(5)));
        assertEquals(JobState.SCHEDULED, scheduled.state());
        assertTrue(scheduled.created());
        JobInfo again = onEventLoop(() -> reactive.schedule(JobRequest.topic(topic).id(scheduled.id())));
        assertTrue(!again.created() && again.runAt().equals(scheduled.runAt()), "an existing id answers its job: " + again);
        Optional<JobInfo> read = onEventLoop(() -> reactive.get(topic, scheduled.id()));
        assertEquals(JobState.SCHEDULED, read.orElseThrow().state());
        assertEquals(CancelOutcome.CANCELLED, onEventLoop(() -> reactive.cancel(topic, scheduled.id())));
        assertEquals(Optional.empty(), onEventLoop(() -> reactive.get(topic, scheduled.id())));
        assertEquals(CancelOutcome.UNKNOWN, onEventLoop(() -> reactive.cancel(topic, scheduled.id())));
    }

    @Test
    void aBrokenRuleFailsTheUniAndNothingIsWritten() throws Exception {
        String topic = Topics.fresh("reactive-invalid");
        // Building the Uni throws nothing: the failure comes with the subscription.
        Uni<List<JobInfo>> batch = reactive.scheduleAll(List.of(JobRequest.topic(topic).id("fine"),
                JobRequest.topic(topic).id("bad").delay(Duration.ofMillis(-1))));
        Exception e = expectFailure(() -> batch);
        InvalidJobException invalid = assertInstanceOf(InvalidJobException.class, e);
        assertEquals("requests[1].delayMs", invalid.field());
        assertEquals("id", assertInstanceOf(InvalidJobException.class,
                expectFailure(() -> reactive.get(topic, "no/slash"))).field());
        assertEquals(0, hlen(topic), "the valid job of the batch was not written either");
        try (Resp r = RedisTestResource.resp()) {
            assertEquals(0L, r.num("SISMEMBER", "dq:topics", topic));
        }
    }

    private Exception expectFailure(java.util.function.Supplier<Uni<?>> call) throws Exception {
        try {
            Object result = onEventLoop(() -> call.get().map(x -> (Object) x));
            throw new AssertionError("expected a failure, got " + result);
        } catch (AssertionError a) {
            throw a;
        } catch (Exception e) {
            return e;
        }
    }

    @Test
    void withRedisAwayTheUniFailsAsStoreUnavailableAndWorksAgainWhenItIsBack() throws Exception {
        String topic = Topics.fresh("reactive-outage");
        RedisTestResource.redis().stop();
        try {
            assertInstanceOf(StoreUnavailableException.class,
                    expectFailure(() -> reactive.schedule(JobRequest.topic(topic).id("o1"))));
        } finally {
            RedisTestResource.redis().start();
        }
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
                .until(() -> onEventLoop(() -> reactive.schedule(JobRequest.topic(topic).id("o1"))).state() == JobState.SCHEDULED);
        assertEquals(1, hlen(topic));
    }
}
