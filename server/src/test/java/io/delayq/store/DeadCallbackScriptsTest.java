package io.delayq.store;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import jakarta.inject.Inject;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.JobRequest;
import io.delayq.core.Jobs;
import io.delayq.dev.Resp;
import io.delayq.ops.devui.DelayqJsonRpcService;
import io.delayq.store.DeadCallbackStore.CallbackOutcome;
import io.delayq.store.DeadCallbackStore.DeadCallback;
import io.delayq.store.Inspection;
import io.delayq.support.RedisTestResource;
import io.delayq.support.Topics;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * Dead-job callbacks in the scripts: the step that buries a job (fail, reclaim after too many lost
 * attempts) records the callback with it, only for a topic with a dead-url; a callback that fails
 * for good moves from callbacks to cbfailed, nothing dropped. And the topic's signing keys show
 * nowhere: Dev UI data, metrics, dashboard.
 */
@QuarkusTest
@QuarkusTestResource(RedisTestResource.class)
@TestProfile(DeadCallbackScriptsTest.WithDeadUrl.class)
class DeadCallbackScriptsTest {
    static final String HOOKED = Topics.fresh("cb-fail");
    static final String LOST = Topics.fresh("cb-lost");
    static final String GIVE_UP = Topics.fresh("cb-give-up");
    static final String PLAIN = Topics.fresh("cb-none");
    static final String STALE = Topics.fresh("cb-stale");
    static final String CAPPED = Topics.fresh("cb-capped");
    static final String FORGET = Topics.fresh("cb-forget");
    static final String KEY = "dev-ui-must-not-show-0123456789";
    /** CAPPED's delayq.topics.<t>.dead.max-jobs: the failed callbacks share the dead set's cap. */
    static final int CAPPED_KEEP = 20;

    public static class WithDeadUrl implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            // Nobody listens at the dead-url, and a failed try waits an hour: the test drives the
            // callbacks itself after the sender's first try.
            return Map.ofEntries(Map.entry("delayq.topics." + CAPPED + ".dead.max-jobs", Integer.toString(CAPPED_KEEP)),
                    Map.entry("delayq.topics." + HOOKED + ".dead-url", "http://127.0.0.1:9/dead"),
                    Map.entry("delayq.topics." + LOST + ".dead-url", "http://127.0.0.1:9/dead"),
                    Map.entry("delayq.topics." + GIVE_UP + ".dead-url", "http://127.0.0.1:9/dead"),
                    Map.entry("delayq.topics." + STALE + ".dead-url", "http://127.0.0.1:9/dead"),
                    Map.entry("delayq.topics." + CAPPED + ".dead-url", "http://127.0.0.1:9/dead"),
                    Map.entry("delayq.topics." + FORGET + ".dead-url", "http://127.0.0.1:9/dead"),
                    Map.entry("delayq.topics." + HOOKED + ".http.signing-keys", KEY),
                    Map.entry("delayq.callbacks.retry-initial", "1h"), Map.entry("delayq.callbacks.retry-max", "2h"),
                    Map.entry("delayq.callbacks.poll-interval", "1h"));
        }
    }

    @Inject
    Jobs jobs;
    @Inject
    JobQueue store;
    @Inject
    DeadCallbackStore callbackStore;
    @Inject
    Inspection inspection;
    @Inject
    io.delayq.dispatch.TopicRegistry registry;

    @Test
    void aFailedLastAttemptRecordsTheCallbackWithTheBurialOnlyForATopicWithADeadUrl() {
        for (String topic : List.of(HOOKED, PLAIN)) {
            String id = "last-" + topic;
            Partition p = store.partitionsOf(topic).get(0);
            jobs.schedule(JobRequest.topic(topic).id(id).delay(Duration.ZERO).maxAttempts(1));
            TakenJob t = take(p);
            assertEquals(FailOutcome.Kind.DEAD, store.fail(p, t.lease(), 0, "boom", 10).kind());
            try (Resp redis = RedisTestResource.resp()) {
                String died = redis.str("ZSCORE", Topics.keys(topic) + "dead", id);
                String member = died + ":" + id;
                if (topic.equals(HOOKED)) {
                    assertNotNull(redis.str("ZSCORE", Topics.keys(topic) + "callbacks", member), "recorded with the burial");
                    String data = redis.str("HGET", Topics.keys(topic) + "cbdata", member);
                    assertTrue(data.matches("(?s)[01]," + died + ",[^\n]*\n.*boom.*"), data);
                } else {
                    assertEquals(0L, redis.num("EXISTS", Topics.keys(topic) + "callbacks"), "no dead-url, no callback");
                }
            }
        }
    }

    @Test
    void aReclaimThatBuriesAfterTooManyLostAttemptsRecordsTheCallbackWithLostAttempts() {
        Partition p = store.partitionsOf(LOST).get(0);
        jobs.schedule(JobRequest.topic(LOST).id("crasher").delay(Duration.ZERO).payload(Map.of("a", 1)));
        loseLease(p, "crasher");
        assertEquals(1, store.reclaim(p, 100, 10, 2, java.util.List.of(), 0, 0, 1.0, 0, 0)[0], "the first loss is retried");
        try (Resp redis = RedisTestResource.resp()) {
            assertEquals(0L, redis.num("EXISTS", Topics.keys(LOST) + "cbdata"), "no callback yet");
        }
        loseLease(p, "crasher");
        assertEquals(1, store.reclaim(p, 100, 10, 2, java.util.List.of(), 0, 0, 1.0, 0, 0)[1], "the second loss in a row is the last");
        // The second loss (max lost attempts 2) buried it: its callback is there, with the count.
        try (Resp redis = RedisTestResource.resp()) {
            String died = redis.str("ZSCORE", Topics.keys(LOST) + "dead", "crasher");
            assertNotNull(died, "buried");
            String data = redis.str("HGET", Topics.keys(LOST) + "cbdata", died + ":crasher");
            assertNotNull(data, "callback recorded by reclaim");
            DeadCallback c = DeadCallback.parse(p, died + ":crasher", data);
            assertEquals(2, c.record().lostAttempts());
            assertEquals("{\"a\":1}", c.record().payload());
            assertTrue(c.record().lastError().contains("max-lost-attempts"), c.record().lastError());
        }
    }

    @Test
    void aCallbackThatFailsForGoodMovesToTheFailedSetWithItsError() {
        Partition p = store.partitionsOf(GIVE_UP).get(0);
        jobs.schedule(JobRequest.topic(GIVE_UP).id("unheard").delay(Duration.ZERO).maxAttempts(1));
        TakenJob t = take(p);
        store.fail(p, t.lease(), 0, "gone", 10, true);
        try (Resp redis = RedisTestResource.resp()) {
            String member = redis.str("ZSCORE", Topics.keys(GIVE_UP) + "dead", "unheard") + ":unheard";
            // The sender's own first try (nobody at port 9) settles it for an hour later.
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(
                    () -> redis.str("HGET", Topics.keys(GIVE_UP) + "cbdata", member).startsWith("1,"));
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> Double.parseDouble(
                    redis.str("ZSCORE", Topics.keys(GIVE_UP) + "callbacks", member)) > System.currentTimeMillis() + 1_800_000);
            redis.call("ZADD", Topics.keys(GIVE_UP) + "callbacks", "0", member); // due now
            List<DeadCallback> claimed = store.await(callbackStore.takeCallbacksAsync(p, 50, 60_000));
            DeadCallback c = claimed.stream().filter(x -> x.member().equals(member)).findFirst().orElseThrow();
            assertEquals(2, c.tries(), "a claim counts a try");
            assertTrue(Double.parseDouble(redis.str("ZSCORE", Topics.keys(GIVE_UP) + "callbacks", member))
                    > System.currentTimeMillis() + 50_000, "claimed: pushed out, still in the set");
            assertTrue(store.await(callbackStore.settleCallbackAsync(c, CallbackOutcome.FAILED, 0, "answered 410")));
            assertNull(redis.str("ZSCORE", Topics.keys(GIVE_UP) + "callbacks", member));
            assertNotNull(redis.str("ZSCORE", Topics.keys(GIVE_UP) + "cbfailed", member), "moved, not dropped");
            assertFalse(store.await(callbackStore.settleCallbackAsync(c, CallbackOutcome.RETRY, 0, "")), "no longer pending");
            DeadCallback failed = callbackStore.failedCallbacks(GIVE_UP, 50).stream().filter(x -> x.id().equals("unheard"))
                    .findFirst().orElseThrow();
            assertEquals("answered 410", failed.lastError());
        }
    }

    @Test
    void anExpiredClaimCanNeitherRetryNorFailACallbackClaimedAgainButItsDeliveryCounts() {
        Partition p = store.partitionsOf(STALE).get(0);
        String member = buryAndWaitForTheSendersFirstTry(p, "hung");
        try (Resp redis = RedisTestResource.resp()) {
            String callbacks = Topics.keys(STALE) + "callbacks";
            redis.call("ZADD", callbacks, "0", member);
            DeadCallback hung = claim(p, member, 60_000);
            redis.call("ZADD", callbacks, "0", member); // its claim expired (a hung call)
            DeadCallback live = claim(p, member, 60_000);
            assertEquals(hung.tries() + 1, live.tries());
            String claimedUntil = redis.str("ZSCORE", callbacks, member);
            assertFalse(store.await(callbackStore.settleCallbackAsync(hung, CallbackOutcome.RETRY, 0, "late")), "not its claim");
            assertEquals(claimedUntil, redis.str("ZSCORE", callbacks, member), "not rescored under the live claim");
            assertFalse(store.await(callbackStore.settleCallbackAsync(hung, CallbackOutcome.FAILED, 0, "late")), "not its claim");
            assertNull(redis.str("ZSCORE", Topics.keys(STALE) + "cbfailed", member), "not given up under the live claim");
            assertTrue(redis.str("HGET", Topics.keys(STALE) + "cbdata", member).startsWith(live.tries() + ","));
            // The live claim gives up; the hung call then turns out to have delivered it.
            assertTrue(store.await(callbackStore.settleCallbackAsync(live, CallbackOutcome.FAILED, 0, "answered 503")));
            assertNotNull(redis.str("ZSCORE", Topics.keys(STALE) + "cbfailed", member));
            assertTrue(store.await(callbackStore.settleCallbackAsync(hung, CallbackOutcome.DONE, 0, "")), "delivered is delivered");
            assertNull(redis.str("ZSCORE", Topics.keys(STALE) + "cbfailed", member), "no longer shown as failed");
            assertNull(redis.str("HGET", Topics.keys(STALE) + "cbdata", member));
        }
    }

    @Test
    void aPartitionKeepsTheNewestFailedCallbacksUpToTheDeadCapAndDropsOlderOnesWithTheirData() {
        Partition p = store.partitionsOf(CAPPED).get(0);
        String member = buryAndWaitForTheSendersFirstTry(p, "last-straw");
        String failedKey = Topics.keys(CAPPED) + "cbfailed", dataKey = Topics.keys(CAPPED) + "cbdata";
        int old = CAPPED_KEEP + 5;
        long recent = System.currentTimeMillis() - 100_000; // within delayq.dead.max-age
        try (Resp redis = RedisTestResource.resp()) {
            List<String> zadd = new java.util.ArrayList<>(List.of("ZADD", failedKey));
            List<String> hset = new java.util.ArrayList<>(List.of("HSET", dataKey));
            for (int i = 0; i < old; i++) {
                zadd.add(Long.toString(recent + i));
                zadd.add("1:old-" + i);
                hset.add("1:old-" + i);
                hset.add("3,1,gone\n{}");
            }
            redis.call(zadd.toArray(String[]::new));
            redis.call(hset.toArray(String[]::new));
            redis.call("ZADD", Topics.keys(CAPPED) + "callbacks", "0", member);
            DeadCallback c = claim(p, member, 60_000);
            assertTrue(store.await(callbackStore.settleCallbackAsync(c, CallbackOutcome.FAILED, 0, "answered 410")));
            assertEquals((long) CAPPED_KEEP, redis.num("ZCARD", failedKey));
            assertNotNull(redis.str("ZSCORE", failedKey, member), "the newest is kept");
            assertNull(redis.str("ZSCORE", failedKey, "1:old-0"), "the oldest is dropped");
            assertNull(redis.str("HGET", dataKey, "1:old-0"), "with its data");
            assertNull(redis.str("HGET", dataKey, "1:old-5"));
            assertNotNull(redis.str("HGET", dataKey, "1:old-6"));
            assertEquals((long) CAPPED_KEEP, redis.num("HLEN", dataKey), "no data left without its entry");
        }
    }

    @Test
    void aTopicWithCallbacksStillToSendIsNotForgottenAndOnceTheyAreSettledItsCallbackKeysGoWithIt() {
        Partition p = store.partitionsOf(FORGET).get(0);
        String member = buryAndWaitForTheSendersFirstTry(p, "purged-early");
        String failedMember = "1:failed-long-ago";
        try (Resp redis = RedisTestResource.resp()) {
            redis.call("ZADD", Topics.keys(FORGET) + "cbfailed", "1", failedMember);
            redis.call("HSET", Topics.keys(FORGET) + "cbdata", failedMember, "3,1,gone\n{}");
            given().delete("/topics/" + FORGET + "/dead/purged-early").then().statusCode(204);
            // No job left, but its callback is still to send: forgetting the topic would drop it.
            given().delete("/topics/" + FORGET).then().statusCode(409)
                    .body(org.hamcrest.Matchers.containsString("callback"));
            assertNotNull(redis.str("ZSCORE", Topics.keys(FORGET) + "callbacks", member));
            redis.call("ZADD", Topics.keys(FORGET) + "callbacks", "0", member);
            assertTrue(store.await(callbackStore.settleCallbackAsync(claim(p, member, 60_000), CallbackOutcome.DONE, 0, "")));
            given().delete("/topics/" + FORGET).then().statusCode(204);
            assertEquals(0L, redis.num("EXISTS", Topics.keys(FORGET) + "cbfailed", Topics.keys(FORGET) + "cbdata",
                    Topics.keys(FORGET) + "callbacks", Topics.keys(FORGET) + "cbnext"),
                    "the failed callbacks and their data go with the topic");
        }
    }

    @Test
    void oneReadAnswersTheEarliestCallbackOfEveryPartitionAndMinusOneWhereThereIsNone() {
        String topic = Topics.fresh("cb-heads");
        List<Partition> ps = List.of(new Partition(topic, 0), new Partition(topic, 1), new Partition(topic, 2));
        try (Resp redis = RedisTestResource.resp()) {
            redis.call("ZADD", "dq:{" + topic + "#0}:callbacks", "1700000000123", "1:a", "1800000000000", "2:b");
            redis.call("ZADD", "dq:{" + topic + "#2}:callbacks", "42", "3:c");
            // Written behind the scripts' back (as a store from before cbnext was kept): the first
            // look reads the callbacks themselves and sets cbnext; later looks read cbnext alone.
            List<Long> heads = callbackStore.nextCallbacksAsync(ps, true).stream().map(store::await).toList();
            assertEquals(List.of(1700000000123L, -1L, 42L), heads);
            assertEquals(List.of(1700000000123L, -1L, 42L),
                    ps.stream().map(p -> store.await(callbackStore.nextCallbackAsync(p))).toList(), "as one read per partition answers");
            assertEquals(List.of(1700000000123L, -1L, 42L),
                    callbackStore.nextCallbacksAsync(ps, false).stream().map(store::await).toList(), "from cbnext alone");
            long before = commandsProcessed(redis);
            callbackStore.nextCallbacksAsync(ps, false).stream().map(store::await).toList();
            // INFO itself counts as one: the look at three partitions is one more.
            assertEquals(2, commandsProcessed(redis) - before, "one command for all partitions");
        }
    }

    private static long commandsProcessed(Resp redis) {
        String info = String.valueOf(redis.call("INFO", "stats"));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("total_commands_processed:(\\d+)").matcher(info);
        assertTrue(m.find(), info);
        return Long.parseLong(m.group(1));
    }

    @Test
    void cbnextFollowsTheEarliestPendingCallbackThroughBurialClaimAndSettle() {
        Partition p = new Partition(HOOKED, 0);
        try (Resp redis = RedisTestResource.resp()) {
            // Buried, its first try failed (due again after the long retry delay): cbnext is the head.
            String member = buryAndWaitForTheSendersFirstTry(p, Topics.fresh("cbnext"));
            assertCbnextIsTheHead(redis, p);
            // Made due behind the scripts' back (cbnext is stale now), then claimed: its score is the
            // claim's end, and the claim puts cbnext right.
            redis.call("ZADD", Topics.keys(p.topic()) + "callbacks", "0", member);
            DeadCallback c = claim(p, member, 60_000);
            assertCbnextIsTheHead(redis, p);
            // Delivered: gone from callbacks; cbnext is the next one's due time, or absent.
            assertTrue(store.await(callbackStore.settleCallbackAsync(c, DeadCallbackStore.CallbackOutcome.DONE, 0, "")));
            assertCbnextIsTheHead(redis, p);
        }
    }

    private static void assertCbnextIsTheHead(Resp redis, Partition p) {
        String keys = Topics.keys(p.topic());
        String head = redis.str("ZRANGE", keys + "callbacks", "0", "0", "WITHSCORES");
        String next = redis.str("GET", keys + "cbnext");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)(\\.0+)?\\]?$").matcher(String.valueOf(head));
        if (m.find()) {
            assertEquals(m.group(1), next, "cbnext = the head's score (" + head + ")");
        } else {
            assertEquals(null, next, "no callback pending, no cbnext (" + head + ")");
        }
    }

    /** Buries a job of the partition's topic; answers its callback once the sender's own first try (to port 9) failed. */
    private String buryAndWaitForTheSendersFirstTry(Partition p, String id) {
        jobs.schedule(JobRequest.topic(p.topic()).id(id).delay(Duration.ZERO).maxAttempts(1));
        TakenJob t = take(p);
        store.fail(p, t.lease(), 0, "gone", 10, true);
        try (Resp redis = RedisTestResource.resp()) {
            String member = redis.str("ZSCORE", Topics.keys(p.topic()) + "dead", id) + ":" + id;
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> Double.parseDouble(redis.str("ZSCORE",
                    Topics.keys(p.topic()) + "callbacks", member)) > System.currentTimeMillis() + 1_800_000);
            return member;
        }
    }

    private DeadCallback claim(Partition p, String member, long claimMs) {
        return store.await(callbackStore.takeCallbacksAsync(p, 50, claimMs)).stream().filter(x -> x.member().equals(member))
                .findFirst().orElseThrow();
    }

    @Test
    void theSigningKeyShowsNeitherInTheDevUiNorInMetricsNorOnTheDashboard() throws Exception {
        jobs.schedule(JobRequest.topic(HOOKED).id("visible").delay(Duration.ofHours(1)));
        // The Dev UI card's data, as its JSON-RPC service (a bean of dev mode only) answers it.
        String devUiData = new ObjectMapper().writeValueAsString(new DelayqJsonRpcService(inspection, registry).topics());
        assertTrue(devUiData.contains(HOOKED), devUiData);
        String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
        String pages = given().get("/delayq").asString() + given().get("/delayq/topics/" + HOOKED).asString()
                + given().get("/topics").asString();
        assertTrue(pages.contains(HOOKED));
        for (String out : List.of(devUiData, metrics, pages)) {
            assertFalse(out.contains(KEY), "the key is shown");
        }
    }

    /** Takes the partition's one due job (the topics are served by nobody here). */
    private TakenJob take(Partition p) {
        Set<Integer> older = new HashSet<>();
        TakenJob[] taken = new TakenJob[1];
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
            List<TakenJob> jobs = store.take(p, 1, 30_000, "T:1:", older, List.of(), 0).jobs();
            taken[0] = jobs.isEmpty() ? null : jobs.get(0);
            return taken[0] != null;
        });
        return taken[0];
    }

    private void loseLease(Partition p, String id) {
        Set<Integer> older = new HashSet<>();
        Awaitility.await().atMost(Duration.ofSeconds(5))
                .until(() -> !store.take(p, 1, 1, "A:" + System.nanoTime() + ":", older, List.of(), 0).jobs().isEmpty());
        try (Resp redis = RedisTestResource.resp()) {
            redis.call("ZADD", Topics.keys(p.topic()) + "inflight", "1000", id);
        }
    }
}
