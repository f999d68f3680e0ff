package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import io.delayq.core.JobInfo;
import io.delayq.core.JobState;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * The one-job enqueue script (enqueue1.lua) against the batch one (enqueue.lua), and the
 * assembly of each script from the lib.lua functions it calls; on topics no replica serves.
 */
class EnqueueScriptsTest {
    private static final HandBuiltStore STORE = HandBuiltStore.configured();
    private static final String TRACE = "0af7651916cd43dd8448eb211c80319cb7ad6b7169203331" + "01";
    JobQueue store = STORE.queue;
    Scripts scripts = STORE.scripts;
    Keys keys = STORE.keys;

    @Test
    void oneJobIsStoredExactlyAsInABatch() {
        String topic = HandBuiltStore.fresh("enq1");
        Partition p = store.partitionsOf(topic).get(0);
        long runAt = System.currentTimeMillis() + 3_600_000L;
        JobInfo single = store.enqueue(p, List.of(new NewJob(topic, "one", false, runAt, 7, "{\"a\":1}")), TRACE).get(0);
        store.enqueue(p, List.of(new NewJob(topic, "two", false, runAt, 7, "{\"a\":1}"),
                new NewJob(topic, "three", false, runAt, 0, "")), TRACE);
        assertTrue(single.created());
        assertEquals(JobState.SCHEDULED, single.state());
        assertEquals(runAt, single.runAt().toEpochMilli());
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            assertEquals(redis.str("HGET", k + "jobs", "two"), redis.str("HGET", k + "jobs", "one"), "same record");
            assertEquals(new JobRecord(runAt, TRACE, 0, 7, "", "{\"a\":1}"),
                    JobRecord.decode(redis.str("HGET", k + "jobs", "one")));
            assertEquals(Long.toString(runAt), redis.str("ZSCORE", k + "due:" + Keys.dayOf(runAt), "one"));
            assertEquals(Long.toString(runAt), redis.str("GET", k + "next"));
        }
    }

    @Test
    void aDelayIsCountedFromRedisTimeAndAnExistingIdAnswersWhatIsThere() {
        String topic = HandBuiltStore.fresh("enq1");
        Partition p = store.partitionsOf(topic).get(0);
        JobInfo first = store.enqueue(p, List.of(new NewJob(topic, "j", true, 60_000, 0, "1")), "").get(0);
        long redisNow;
        try (Resp redis = HandBuiltStore.resp()) {
            redisNow = Long.parseLong(redis.list("TIME").get(0).toString()) * 1000;
        }
        assertTrue(Math.abs(first.runAt().toEpochMilli() - (redisNow + 60_000)) < 5_000, first.runAt() + " vs " + redisNow);
        // Taken (in flight), then enqueued again, singly and in a batch: both answer the job as it is.
        store.enqueue(p, List.of(new NewJob(topic, "now", true, 0, 0, "1")), "");
        assertEquals(1, store.take(p, 1, 30_000, "t:", new HashSet<>(), List.of(), 0).jobs().size());
        JobInfo again = store.enqueue(p, List.of(new NewJob(topic, "now", false, 1, 0, "2")), "").get(0);
        assertFalse(again.created());
        assertEquals(JobState.INFLIGHT, again.state());
        JobInfo twice = store.enqueue(p, List.of(new NewJob(topic, "j", true, 5, 0, "2")), "").get(0);
        assertFalse(twice.created());
        assertEquals(first.runAt(), twice.runAt());
        assertEquals(JobState.SCHEDULED, twice.state());
    }

    @Test
    void aRunAtOnADayNotPassedFailsBeforeAnyWrite() {
        String topic = HandBuiltStore.fresh("enq1");
        Partition p = store.partitionsOf(topic).get(0);
        long runAt = System.currentTimeMillis() + 10 * 86_400_000L;
        List<String> k = List.of(keys.jobs(p), keys.days(p), keys.next(p), keys.inflight(p), keys.leases(p), keys.dead(p),
                keys.leaseNext(p), keys.done(p), keys.ticks(p), keys.paused(p), keys.rateLimit(p), keys.rateTat(p),
                keys.forgotten(p));
        RedisReplyException e = assertThrows(RedisReplyException.class, () -> scripts.run("enqueue1", k,
                List.of("0", keys.wakeChannel(p), "", "0", "", "0", "1", "x", "a", Long.toString(runAt), "0", "1")));
        assertTrue(e.getMessage().contains("DQNEEDDAY " + Keys.dayOf(runAt)), e.getMessage());
        try (Resp redis = HandBuiltStore.resp()) {
            assertEquals(0, redis.num("EXISTS", keys.jobs(p), keys.days(p), keys.next(p)));
        }
    }

    /**
     * Each script carries only the lib.lua functions it calls: checked here independently of the
     * assembler's own rule, by calls ({@code f(}) against definitions ({@code local function f(}).
     */
    @Test
    void everyScriptCompilesAndDefinesEveryLibFunctionItCallsAndNoMore() throws IOException {
        String lib = read("lib");
        List<String> functions = Pattern.compile("(?m)^local function (\\w+)\\(").matcher(lib).results()
                .map(m -> m.group(1)).toList();
        for (String name : Scripts.NAMES) {
            String source = Scripts.assemble(lib, read(name));
            String code = source.replaceAll("--[^\\n]*", "");
            for (String f : functions) {
                boolean defined = code.contains("local function " + f + "(");
                Matcher call = Pattern.compile("(?<![\\w.]|function )" + f + "\\(").matcher(code);
                assertEquals(call.find(), defined, name + ".lua: " + f + (defined ? " carried but never called" : " called but not carried"));
            }
        }
        try (Resp redis = HandBuiltStore.resp()) {
            for (String name : Scripts.NAMES) {
                assertEquals(40, redis.str("SCRIPT", "LOAD", Scripts.assemble(lib, read(name))).length(), name + ".lua compiles");
            }
        }
        String one = Scripts.assemble(lib, read("enqueue1"));
        assertFalse(one.contains("local function ack_leases("), "enqueue1 carries no ack function");
    }

    private static String read(String name) throws IOException {
        try (InputStream in = Scripts.class.getClassLoader().getResourceAsStream("lua/" + name + ".lua")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
