package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.JobRequest;
import io.delayq.core.JobValidator;
import io.delayq.core.NewJob;
import io.delayq.dev.RedisProcess;
import io.delayq.dev.Resp;

/**
 * A Redis full under noeviction (used memory over maxmemory) stops intake, never the work held:
 * kept full for three leases while jobs run, the holder's heartbeats keep extending the leases
 * (allow-oom), so no other replica's reclaim or take gets a job (none runs twice), and every job
 * is acked while Redis is still full; a job that dies then goes to dead, without the dead-job
 * callback (what only adds is skipped while full). On a Redis of its own: the test lowers its maxmemory.
 */
class FullRedisScriptsTest {
    private static final RedisProcess REDIS = RedisProcess.startEphemeral();
    private static final String TOPIC = HandBuiltStore.fresh("full");
    private static final HandBuiltStore STORE = HandBuiltStore.on(REDIS, "delayq.topics." + TOPIC + ".dead-url",
            "http://127.0.0.1:9/dead");
    private static final long LEASE_MS = 1500;

    @AfterAll
    static void stop() {
        REDIS.stop();
    }

    @Test
    void heldJobsKeepTheirLeasesAndAreAckedWhileRedisStaysFullForThreeLeases() throws Exception {
        Assumptions.assumeTrue(STORE.scripts.allowOom(), "script flags (allow-oom) need Redis 7 or later; this redis-server is "
                + REDIS.executablePath());
        JobQueue store = STORE.queue;
        String topic = TOPIC;
        Partition p = store.partitionsOf(topic).get(0);
        JobValidator validator = new JobValidator(STORE.config, new RedisClock());
        List<NewJob> jobs = new ArrayList<>();
        for (int i = 0; i < 11; i++) {
            jobs.add(validator.validate(JobRequest.topic(topic).id("j" + i).delay(Duration.ZERO), new ObjectMapper()));
        }
        store.enqueue(p, jobs, "");
        List<Lease> all = store.take(p, 20, LEASE_MS, "A:", new HashSet<>(), List.of(), 0).jobs().stream()
                .map(TakenJob::lease).toList();
        assertEquals(11, all.size());
        Lease poison = all.get(10);
        List<Lease> held = all.subList(0, 10);
        NewJob late = validator.validate(JobRequest.topic(topic).id("late").delay(Duration.ZERO), new ObjectMapper());

        try (Resp redis = new Resp(REDIS.port())) {
            // Full: a big value, then maxmemory under what Redis uses, with no eviction.
            redis.call("SETRANGE", "filler", "8000000", "x");
            long used = usedMemory(redis);
            redis.call("CONFIG", "SET", "maxmemory-policy", "noeviction");
            redis.call("CONFIG", "SET", "maxmemory", Long.toString(used - 1_000_000));
            assertThrows(StoreUnavailableException.class, () -> store.enqueue(p, List.of(late), ""),
                    "intake is refused while Redis is full");

            // Three leases: the holder heartbeats at a third of its lease, another replica reclaims
            // and takes as often.
            long end = System.nanoTime() + 3 * LEASE_MS * 1_000_000;
            int beats = 0;
            while (System.nanoTime() < end) {
                assertEquals(List.of(), store.extend(p, LEASE_MS, all), "every lease is still ours");
                assertEquals(0, store.reclaim(p, 100, 10, 3, List.of(), 0, 0, 1.0, 0, 0)[0], "no lease lapsed");
                assertEquals(0, store.take(p, 10, LEASE_MS, "B:", new HashSet<>(), List.of(), 0).jobs().size(),
                        "nothing to take twice");
                beats++;
                Thread.sleep(LEASE_MS / 3); // the heartbeat's pace, not a wait for a condition
            }
            assertTrue(beats >= 3, "heartbeats: " + beats);
            assertTrue(usedMemory(redis) > Long.parseLong(configGet(redis, "maxmemory")), "still full");

            assertEquals(List.of(), store.ack(p, held), "every job acked by its holder");
            // A job that dies while Redis is full still moves to dead; its callback (an add) is skipped.
            assertEquals(FailOutcome.Kind.DEAD, store.fail(p, poison, 0, "poison", 3, true).kind());
            assertEquals(1L, redis.num("ZCARD", STORE.keys.dead(p)));
            assertEquals(0L, redis.num("ZCARD", STORE.keys.callbacks(p)), "no callback added while full");
            assertEquals(0L, redis.num("ZCARD", STORE.keys.inflight(p)));
            assertEquals(1L, redis.num("HLEN", STORE.keys.jobs(p)), "the dead one's record alone");
            assertThrows(StoreUnavailableException.class, () -> store.enqueue(p, List.of(late), ""), "still refused");
            // The memory gauge is read while full: the minute's claim (a SET NX) is refused, the reading is not.
            var registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
            assertTrue(new io.delayq.ops.RedisMemory(STORE.gateway, STORE.keys, registry, null).read(),
                    "read although the claim could not be written");
            double ratio = registry.get("delayq.redis.memory.used.ratio").gauge().value();
            assertTrue(ratio >= 1.0, "used / maxmemory while full: " + ratio);

            redis.call("CONFIG", "SET", "maxmemory", "0");
            redis.call("DEL", "filler");
        }
    }

    private static long usedMemory(Resp redis) {
        for (String line : redis.str("INFO", "memory").split("\r\n")) {
            if (line.startsWith("used_memory:")) {
                return Long.parseLong(line.substring("used_memory:".length()));
            }
        }
        throw new IllegalStateException("no used_memory in INFO memory");
    }

    private static String configGet(Resp redis, String name) {
        return String.valueOf(redis.list("CONFIG", "GET", name).get(1));
    }
}
