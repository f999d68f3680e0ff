package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.IfExists;
import io.delayq.core.JobRequest;
import io.delayq.core.JobValidator;
import io.delayq.core.NewJob;
import io.delayq.dev.Resp;

/**
 * A job's priority in its record: a prefix of the runAt ("00", "0", "+", "+0" for 1, 2, 4, 5; see
 * lib.lua's PRIORITY_PREFIX), which an enqueue writes and nothing else with it, and which every
 * release reads the runAt through; or, in a record written before the prefix, the head's SUB mark
 * (lib.lua's PRIORITY_MARK), still read. Neither = 3, so every record written before priorities
 * reads as priority 3; a mark that is not one digit 1..5 stays error text (on both sides, Lua and
 * Java); and every script that rewrites a record (a failed attempt's retry, a snooze, a lost
 * attempt's rerun, a drain's requeue, a burial and a revive) keeps the priority.
 */
class PriorityRecordScriptsTest {
    private static final String TRACE = "0af7651916cd43dd8448eb211c80319c" + "b7ad6b7169203331" + "01";
    private static final HandBuiltStore STORE = HandBuiltStore.configured();
    private final JobQueue store = STORE.queue;
    private final Inspection inspection = STORE.inspection;
    private final JobValidator validator = new JobValidator(STORE.config, new RedisClock());

    /** What a record of each priority starts with, before its runAt in base 36. */
    private static final Map<Integer, String> PREFIX = Map.of(1, "00", 2, "0", 3, "", 4, "+", 5, "+0");
    private static final String LIB = lua("lib");

    private static String lua(String name) {
        try (InputStream in = Scripts.class.getClassLoader().getResourceAsStream("lua/" + name + ".lua")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs code with lib.lua's functions (no keys, no day shard), its ARGV from A on. */
    private static List<Object> withLib(String code, String... args) {
        List<Object> call = new ArrayList<>(List.of("EVAL", Scripts.assemble(LIB, code), "0", "0"));
        call.addAll(List.of(args));
        try (Resp redis = HandBuiltStore.resp()) {
            return redis.list(call.toArray());
        }
    }

    @Test
    void anEnqueueWritesAPriorityAsAPrefixOfTheRunAtAndNothingElse() {
        String topic = HandBuiltStore.fresh("prio-prefix");
        Partition p = store.partitionsOf(topic).get(0);
        long runAt = System.currentTimeMillis() + 3_600_000;
        List<NewJob> jobs = new ArrayList<>();
        for (int priority = 1; priority <= 5; priority++) {
            jobs.add(new NewJob(topic, "p" + priority, false, runAt, 0, "\"xxxxxxxxxxxxxx\"", IfExists.KEEP, null, null, null,
                    null, priority));
        }
        store.enqueue(p, jobs, "");
        try (Resp redis = HandBuiltStore.resp()) {
            for (int priority = 1; priority <= 5; priority++) {
                String rec = redis.str("HGET", HandBuiltStore.keysOf(topic) + "jobs", "p" + priority);
                assertEquals(PREFIX.get(priority) + Long.toString(runAt, 36) + "\n\"xxxxxxxxxxxxxx\"", rec,
                        "priority " + priority + ": the prefix, no empty attempt fields");
                JobRecord r = JobRecord.decode(rec);
                assertEquals(priority, r.priority());
                assertEquals(runAt, r.runAt());
                assertEquals(0, r.attempts());
                assertEquals("", r.lastError());
            }
        }
    }

    /**
     * The prefix costs a job no memory at the benchmark's jobs (issue 33's burst: ids "0".."N-1",
     * a 16-byte payload, no other field): every record stays in the allocator size class of a
     * priority-3 one, so the records of a burst with mixed priorities hold exactly the bytes of the
     * same burst without (MEMORY USAGE counts each field and value as allocated). Over 128 jobs, so
     * that the hash is a hash table, as the benchmark's is.
     */
    @Test
    void theRecordsOfABurstWithMixedPrioritiesHoldTheBytesOfOneWithout() {
        long runAt = System.currentTimeMillis() + 3_600_000;
        long[] bytes = new long[2];
        for (int mixed = 0; mixed < 2; mixed++) {
            String topic = HandBuiltStore.fresh("prio-mem");
            Partition p = store.partitionsOf(topic).get(0);
            List<NewJob> jobs = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                jobs.add(new NewJob(topic, Integer.toString(i), false, runAt, 0, "\"xxxxxxxxxxxxxx\"", IfExists.KEEP, null,
                        null, null, null, mixed == 1 ? 1 + i % 5 : null));
            }
            store.enqueue(p, jobs, "");
            try (Resp redis = HandBuiltStore.resp()) {
                String key = HandBuiltStore.keysOf(topic) + "jobs";
                assertEquals("hashtable", redis.str("OBJECT", "ENCODING", key));
                bytes[mixed] = redis.num("MEMORY", "USAGE", key, "SAMPLES", "0");
            }
        }
        assertEquals(bytes[0], bytes[1], "the records' bytes, priority 3 only / mixed 1..5");
    }

    /**
     * A release before priorities parses the runAt as Java's Long.parseLong(text, 36) (JobRecord)
     * and Lua's tonumber(text, 36) (lib.lua's decode_head, list.lua) do: the prefix reads as part of
     * it, the same runAt, never a malformed record; it rewrites the runAt as b36 (its encode and
     * with_run_at), dropping the prefix: the job is priority 3 from there on.
     */
    @Test
    void anOlderReleaseReadsAPrefixedRunAtAsTheRunAt() {
        for (long runAt : new long[] { System.currentTimeMillis(), 0, 35, 36, 4_102_444_800_000L }) {
            for (String prefix : PREFIX.values()) {
                String text = prefix + Long.toString(runAt, 36);
                assertEquals(runAt, Long.parseLong(text, 36), text);
                try (Resp redis = HandBuiltStore.resp()) {
                    assertEquals(Long.toString(runAt),
                            redis.str("EVAL", "return string.format('%d', tonumber(ARGV[1], 36))", "0", text), text);
                }
            }
        }
    }

    /**
     * Lua reads the prefix as Java does, the runAt 0 included (b36 writes "0": a prefix never takes
     * the runAt's last digit), with and without the fields after the runAt; encode writes the
     * record back the same, and with_run_at keeps the prefix.
     */
    @Test
    void luaAndJavaReadThePrefixAlikeAndTheScriptsWriteItBack() {
        for (long runAt : new long[] { 0, 1, 36, System.currentTimeMillis() }) {
            for (int priority = 1; priority <= 5; priority++) {
                String head = PREFIX.get(priority) + Long.toString(runAt, 36);
                for (String rec : List.of(head + "\n{}", head + ",2,5,\u001cg\u001cboom\n[1]")) {
                    JobRecord j = JobRecord.decode(rec);
                    assertEquals(priority, j.priority(), rec);
                    assertEquals(runAt, j.runAt(), rec);
                    List<Object> r = withLib("local r = decode(ARGV[A]) return { r.priority, string.format('%d', r.run_at),"
                            + " r.err, r.group, encode(r), with_run_at(ARGV[A], 42), priority_of(ARGV[A]) }", rec);
                    assertEquals(List.of((long) priority, Long.toString(runAt), j.lastError(), j.group() == null ? "" : j.group(),
                            rec, PREFIX.get(priority) + "16" + rec.substring(head.length()), (long) priority), r, rec);
                }
            }
        }
    }

    /** A record written before the prefix keeps its priority through Lua, and is written back with the prefix. */
    @Test
    void aMarkOfARecordWrittenBeforeThePrefixIsReadAndWrittenBackAsAPrefix() {
        List<Object> r = withLib("local r = decode(ARGV[A]) return { r.priority, r.err, encode(r), priority_of(ARGV[A]) }",
                "kx2,0,0,\u001a5\u001a\n{}");
        assertEquals(List.of(5L, "", "+0kx2\n{}", 5L), r);
        r = withLib("local r = decode(ARGV[A]) return { r.priority, r.err, encode(r) }", "kx2,1,0,\u001a1\u001aboom\n{}");
        assertEquals(List.of(1L, "boom", "00kx2,1,0,boom\n{}"), r);
    }

    @Test
    void aRecordWithoutTheMarkIsPriorityThree() {
        assertEquals(3, JobRecord.decode("kx2\n{}").priority());
        assertEquals(3, JobRecord.decode("kx2,2,5\n{}").priority());
        JobRecord old = JobRecord.decode("kx2,2,5,\u001e" + TRACE + "\u001f1\u001f\u001cg\u001c\u001b100,\u001bboom\n{}");
        assertEquals(3, old.priority());
        assertEquals("g", old.group());
        assertEquals(100L, old.timeoutMs());
        assertEquals("boom", old.lastError());
    }

    @Test
    void theMarkRidesAfterTheOtherMarksAndBeforeTheError() {
        JobRecord r = JobRecord.decode("kx2,1,0,\u001e" + TRACE + "\u001cg\u001c\u001b,99\u001b\u001a1\u001aboom\n[1]");
        assertEquals(1, r.priority());
        assertEquals("g", r.group());
        assertEquals(99L, r.expiresAt());
        assertEquals(TRACE, r.trace());
        assertEquals("boom", r.lastError());
        assertEquals("[1]", r.payload());
        assertEquals(5, JobRecord.decode("kx2,0,0,\u001a5\u001a\n{}").priority());
        assertEquals("", JobRecord.decode("kx2,0,0,\u001a5\u001a\n{}").lastError());
    }

    @Test
    void aMarkThatIsNotAPriorityStaysErrorText() {
        for (String text : List.of("\u001a0\u001aboom", "\u001a6\u001aboom", "\u001ax\u001aboom", "\u001a12\u001aboom", "\u001a")) {
            JobRecord r = JobRecord.decode("kx2,1,0," + text + "\n{}");
            assertEquals(3, r.priority(), text);
            assertEquals(text, r.lastError(), text);
        }
    }

    /** Job "j" of a fresh topic, due, its record given priority (as an enqueue will write it). */
    private Partition dueWithPriority(String topic, int priority, String error) {
        NewJob job = validator.validate(JobRequest.topic(topic).id("j").runAt(Instant.now().minusSeconds(5)).maxAttempts(2),
                new ObjectMapper());
        Partition p = store.partitionOf(topic, "j", null);
        store.enqueue(p, List.of(job), "");
        try (Resp redis = HandBuiltStore.resp()) {
            String k = HandBuiltStore.keysOf(topic);
            String rec = redis.str("HGET", k + "jobs", "j");
            int nl = rec.indexOf('\n');
            redis.num("HSET", k + "jobs", "j", rec.substring(0, nl) + ",\u001a" + priority + "\u001a" + error + rec.substring(nl));
        }
        return p;
    }

    private static JobRecord stored(String topic) {
        try (Resp redis = HandBuiltStore.resp()) {
            return JobRecord.decode(redis.str("HGET", HandBuiltStore.keysOf(topic) + "jobs", "j"));
        }
    }

    private TakenJob takeOne(Partition p, long leaseMs) {
        List<TakenJob> jobs = store.take(p, 1, leaseMs, "x" + System.nanoTime() + ":", new HashSet<>(), List.of(), 0).jobs();
        assertEquals(1, jobs.size(), "one job taken");
        return jobs.get(0);
    }

    @Test
    void theScriptsThatRewriteARecordKeepItsPriority() {
        String topic = HandBuiltStore.fresh("prio-rec");
        Partition p = dueWithPriority(topic, 1, "first");
        TakenJob taken = takeOne(p, 30_000);
        assertEquals(1, taken.record().priority());
        assertEquals("first", taken.record().lastError());

        assertEquals(FailOutcome.Kind.RETRY, store.fail(p, taken.lease(), 0, "boom", 3).kind());
        assertEquals(1, stored(topic).priority(), "kept by a failed attempt's retry");
        assertEquals("boom", stored(topic).lastError());

        taken = takeOne(p, 30_000);
        assertTrue(store.snooze(p, taken.lease(), false, 0).isPresent());
        assertEquals(1, stored(topic).priority(), "kept by a snooze");

        taken = takeOne(p, 1);
        TakenJob lost = taken;
        Awaitility.await().atMost(Duration.ofSeconds(30))
                .until(() -> store.reclaim(p, 100, 10, 3, List.of(), 0, 0, 1.0, 0, 0)[0] == 1);
        assertEquals(1, stored(topic).priority(), "kept by a lost attempt's rerun");
        assertEquals(List.of(lost.lease().id()), store.ack(p, List.of(lost.lease())), "the lost attempt's ack is stale");

        taken = takeOne(p, 30_000);
        assertEquals(1, store.requeue(p, List.of(taken.lease())));
        assertEquals(1, stored(topic).priority(), "kept by a drain's requeue");

        taken = takeOne(p, 30_000);
        assertEquals(FailOutcome.Kind.DEAD, store.fail(p, taken.lease(), 0, "last", 2).kind());
        assertEquals(1, stored(topic).priority(), "kept by a burial");
        assertEquals("last", stored(topic).lastError());
        assertTrue(inspection.revive(topic, "j").isPresent());
        assertEquals(1, stored(topic).priority(), "kept by a revive");
        assertEquals(1, takeOne(p, 30_000).record().priority());
    }

    @Test
    void aBadMarkStaysErrorTextThroughTheScripts() {
        String topic = HandBuiltStore.fresh("prio-bad");
        Partition p = dueWithPriority(topic, 7, "boom");
        TakenJob taken = takeOne(p, 30_000);
        assertEquals(3, taken.record().priority());
        assertEquals("\u001a7\u001aboom", taken.record().lastError());
        assertTrue(store.snooze(p, taken.lease(), false, 0).isPresent());
        assertEquals(3, stored(topic).priority());
        assertEquals("\u001a7\u001aboom", stored(topic).lastError(), "the scripts read it as Java does");
    }
}
