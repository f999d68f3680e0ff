package io.delayq.dispatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.store.Keys;
import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.PreviousRelease;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * A rolling upgrade to priorities, with real processes on one Redis: a replica of the previous
 * release ({@link PreviousRelease}, built from git) beside one of this build, serving one topic
 * with group-max-in-flight 2. Jobs of every priority (given through this build: the previous one
 * refuses the field), some in groups; while they come due both releases reschedule and replace them
 * to the runAt they had (an earlier release moves a lane job by its plain shard only, so such a
 * move leaves twins: the lane entry or gheld member, and a plain entry), and each release's replica
 * is SIGKILLed and started again. Every job runs, once; twice only one a killed replica was running
 * when it died (the rerun the contract allows). The previous release's replica is stopped at the end.
 * First, the race those twins open, forced between the processes: this build frozen while the
 * previous release moves lane jobs to their runAt and leases the plain twins; thawed, it must not
 * start them again (it did before the twin fixes of the second review, M2: this test then fails).
 */
class RollingUpgradeIT extends OwnRedisTest {
    private static final int PLAIN = 120, GROUPS = 6, PER_GROUP = 12;

    private static Map<String, String> serving(String topic, Receiver receiver, String via) {
        Map<String, String> s = new HashMap<>();
        s.put("delayq.topics." + topic + ".http.url", receiver.url(via));
        s.put("delayq.topics." + topic + ".group-max-in-flight", "2");
        // A killed replica's leases expire soon, so that its jobs and group slots move on within the test.
        s.put("delayq.dispatch.lease", "2s");
        s.put("delayq.dispatch.heartbeat", "500ms");
        s.put("delayq.dispatch.reclaim-interval", "500ms");
        return s;
    }

    /** A job of the test: its id, group (null = none), runAt and priority (1..5). */
    private record Job(String id, String group, long runAt, int priority) {
        String json(String topic, boolean withPriority, String ifExists) {
            return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\"" + (group == null ? "" : ",\"group\":\"" + group + "\"")
                    + ",\"runAt\":\"" + Instant.ofEpochMilli(runAt) + "\"" + (withPriority ? ",\"priority\":" + priority : "")
                    + (ifExists == null ? "" : ",\"ifExists\":\"" + ifExists + "\"") + "}";
        }
    }

    @Test
    void anEarlierReleaseBesideThisOneRunsEveryJobOnceThroughMovesAndKills() throws Exception {
        Path previous = PreviousRelease.jar();
        String topic = Topics.fresh("upgrade");
        long t0 = System.currentTimeMillis();
        try (Receiver receiver = new Receiver()) {
            // Calls take a while: jobs are in flight, and groups at their limit hold jobs, while moved.
            receiver.holdFor(150);
            AtomicReference<AppProcess> old = new AtomicReference<>(
                    AppProcess.startJar("upg-old-a", previous, redis.port(), serving(topic, receiver, "old-a")));
            AtomicReference<AppProcess> cur = new AtomicReference<>(
                    AppProcess.start("upg-new-a", redis.port(), serving(topic, receiver, "new-a")));
            List<AppProcess> started = new ArrayList<>(List.of(old.get(), cur.get()));
            try {
                List<Job> twins = twinsLeasedByThePreviousRelease(topic, receiver, old.get(), cur.get());
                long start = System.currentTimeMillis() + 4_000;
                List<Job> jobs = new ArrayList<>();
                for (int i = 0; i < PLAIN; i++) {
                    jobs.add(new Job("p" + i, null, start + i * 100L, i % 5 + 1));
                }
                // A group's jobs come due together: two run at once, the others are held meanwhile.
                for (int g = 0; g < GROUPS; g++) {
                    for (int n = 0; n < PER_GROUP; n++) {
                        jobs.add(new Job("g" + g + "-" + n, "g" + g, start + 2_000L * g + n * 20L, (n + g) % 5 + 1));
                    }
                }
                StringBuilder batch = new StringBuilder("[");
                for (Job j : jobs) {
                    batch.append(batch.length() == 1 ? "" : ",").append(j.json(topic, true, null));
                }
                HttpResponse<String> posted = cur.get().post("/jobs/batch", batch.append(']').toString());
                assertEquals(200, posted.statusCode(), posted.body());

                // The moves, each to the runAt the job has, through both releases: half of the jobs
                // replaced 2.5 s before they are due (never after they ran: a replace of an id that
                // ran is a new job), the other half rescheduled 0.8 s before; every grouped job
                // rescheduled through the previous release 0.3 s after it is due, when it may be held.
                List<Move> plan = new ArrayList<>();
                for (int i = 0; i < jobs.size(); i++) {
                    Job j = jobs.get(i);
                    boolean viaOld = i % 4 < 2;
                    if (i % 2 == 0) {
                        plan.add(new Move(j.runAt() - 2_500, j, viaOld, false));
                    } else {
                        plan.add(new Move(j.runAt() - 800, j, viaOld, true));
                    }
                    if (j.group() != null) {
                        plan.add(new Move(j.runAt() + 300, j, true, true));
                    }
                }
                plan.sort((a, b) -> Long.compare(a.at(), b.at()));
                ConcurrentLinkedQueue<String> unexpected = new ConcurrentLinkedQueue<>();
                java.util.Set<String> recreated = java.util.concurrent.ConcurrentHashMap.newKeySet();
                AtomicInteger moves = new AtomicInteger();
                Thread mover = Thread.ofVirtual().start(() -> {
                    for (Move m : plan) {
                        long wait = m.at() - System.currentTimeMillis();
                        if (wait > 0) {
                            try {
                                Thread.sleep(wait); // pacing the moves to the jobs' runAts, not a synchronisation
                            } catch (InterruptedException e) {
                                return;
                            }
                        } else if (!m.reschedule()) {
                            continue; // too late for a replace
                        }
                        move(topic, m, m.viaOld() ? old.get() : cur.get(), unexpected, recreated, moves);
                    }
                });

                // Each release's replica SIGKILLed part-way and started again.
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> receiver.distinct() - twins.size() >= PLAIN / 4);
                old.get().kill();
                long oldKilledAt = System.currentTimeMillis();
                AppProcess oldB = AppProcess.startJar("upg-old-b", previous, redis.port(), serving(topic, receiver, "old-b"));
                started.add(oldB);
                old.set(oldB);
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> receiver.distinct() - twins.size() >= PLAIN / 2);
                cur.get().kill();
                long newKilledAt = System.currentTimeMillis();
                AppProcess curB = AppProcess.start("upg-new-b", redis.port(), serving(topic, receiver, "new-b"));
                started.add(curB);
                cur.set(curB);
                mover.join(Duration.ofSeconds(120));

                int total = jobs.size() + twins.size();
                Awaitility.await().atMost(Duration.ofSeconds(180)).until(() -> receiver.completed.size() == total);
                // The previous release stopped, as the upgrade ends; this one finishes alone.
                oldB.terminate();
                assertTrue(oldB.waitForExit(Duration.ofSeconds(30)), "the previous release's replica stopped");
                try (Resp r = new Resp(redis.port())) {
                    Awaitility.await().atMost(Duration.ofSeconds(30))
                            .until(() -> r.num("HLEN", Topics.keys(topic) + "jobs") == 0
                                    && r.num("ZCARD", Topics.keys(topic) + "inflight") == 0);
                    assertEquals(0L, r.num("HLEN", Topics.keys(topic) + "gadmit"), "no admission left");
                    assertEquals(0L, r.num("ZCARD", Topics.keys(topic) + "gheld"), "nothing held");
                }
                assertTrue(unexpected.isEmpty(), "moves answered " + unexpected);

                for (Job j : twins) {
                    List<Receiver.Delivery> d = receiver.deliveries.get(j.id());
                    assertEquals(1, d.size(), j.id() + " (priority " + j.priority() + ", its plain twin leased by the previous"
                            + " release) ran " + d.size() + " times: " + d);
                }
                Map<String, Long> killedAt = Map.of("old-a", oldKilledAt, "new-a", newKilledAt);
                int again = 0;
                for (Job j : jobs) {
                    List<Receiver.Delivery> d = receiver.deliveries.get(j.id());
                    assertTrue(d != null, j.id() + " never ran");
                    if (d.size() > 1 && recreated.contains(j.id())) {
                        assertEquals(2, d.size(), j.id() + ": " + d);
                    } else if (d.size() > 1) {
                        again++;
                        Receiver.Delivery first = d.get(0);
                        Long died = killedAt.get(first.via());
                        assertTrue(d.size() == 2 && died != null && first.receivedMs() <= died,
                                j.id() + " (priority " + j.priority() + ") ran " + d.size() + " times: " + d);
                    }
                }
                System.out.printf("rolling upgrade %s -> this build: %d jobs, %d moves, %d run again (a killed replica"
                        + " was running them), %.1f s%n", PreviousRelease.COMMIT, total, moves.get(), again,
                        (System.currentTimeMillis() - t0) / 1000.0);
            } finally {
                for (AppProcess app : started) {
                    app.close();
                }
            }
        }
    }

    /**
     * The twin race between the two processes (second review M2): lane jobs, some grouped, enqueued
     * through this build, which is then frozen (SIGSTOP) before they are due; the previous release
     * reschedules each to the runAt it has, which adds a plain entry beside the lane entry, and its
     * take leases that plain twin when due (the calls held open). Thawed, this build's take meets the
     * lane entries of jobs in flight: it must drop them, not start the jobs a second time. Returns the
     * jobs, each to have run once at the end.
     */
    private static List<Job> twinsLeasedByThePreviousRelease(String topic, Receiver receiver, AppProcess old,
            AppProcess cur) {
        long runAt = System.currentTimeMillis() + 5_000; // time for the POST and the freeze on a loaded machine
        List<Job> twins = new ArrayList<>();
        int[] lanes = { 1, 2, 4, 5 };
        for (int i = 0; i < 8; i++) {
            twins.add(new Job("t" + i, null, runAt, lanes[i % 4]));
        }
        for (int i = 0; i < 4; i++) {
            twins.add(new Job("tg" + i, "tg" + i, runAt, lanes[i % 2]));
        }
        java.util.Set<String> ids = new java.util.HashSet<>();
        twins.forEach(j -> ids.add(j.id()));
        CompletableFuture<Void> ending = new CompletableFuture<>();
        receiver.gateBy(d -> ids.contains(d.id()) ? ending : null);
        StringBuilder batch = new StringBuilder("[");
        for (Job j : twins) {
            batch.append(batch.length() == 1 ? "" : ",").append(j.json(topic, true, null));
        }
        HttpResponse<String> posted = cur.post("/jobs/batch", batch.append(']').toString());
        assertEquals(200, posted.statusCode(), posted.body());
        cur.freeze();
        int formed = 0;
        try {
            for (Job j : twins) {
                HttpResponse<String> r = old.send("PATCH", "/jobs/" + topic + "/" + j.id(),
                        "{\"runAt\":\"" + Instant.ofEpochMilli(j.runAt()) + "\"}");
                // 409: this build took the job before it was frozen (a POST slower than 5 s): no twin.
                assertTrue(r.statusCode() == 200 || r.statusCode() == 409, j.id() + ": " + r.statusCode() + " " + r.body());
                formed += r.statusCode() == 200 ? 1 : 0;
            }
            Awaitility.await().atMost(Duration.ofSeconds(60))
                    .until(() -> ids.stream().allMatch(receiver.deliveries::containsKey));
        } finally {
            cur.thaw();
        }
        // This build's take has met every lane entry (each dropped, or leased a second time).
        try (Resp r = new Resp(redis.port())) {
            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> {
                for (Job j : twins) {
                    int code = Keys.laneCode(j.priority(), Keys.dayOf(j.runAt()));
                    if (r.str("ZSCORE", Topics.keys(topic) + "due:" + code, j.id()) != null) {
                        return false;
                    }
                }
                return true;
            });
        }
        ending.complete(null);
        Awaitility.await().atMost(Duration.ofSeconds(60))
                .until(() -> ids.stream().allMatch(receiver.completed::containsKey));
        receiver.gateBy(d -> null);
        System.out.printf("rolling upgrade: %d of %d lane jobs had a plain twin leased by the previous release%n", formed,
                twins.size());
        return twins;
    }

    /** A move of j at a time: a reschedule (PATCH) or a replace, through either release. */
    private record Move(long at, Job job, boolean viaOld, boolean reschedule) {
    }

    /**
     * A reschedule (PATCH) or a replace (POST, ifExists replace; no priority: the previous release
     * refuses the field, this one keeps the stored priority) of a job to the runAt it has, through
     * app. 200 is a move; 404 (ran already), 409 (running, dead) and a replica that is not there
     * (killed) are what a client sees too, and fine here. A replace that answers 201 enqueued the id
     * anew (the request came after the job had run, on a very slow machine): its second run is
     * expected. Anything else is recorded.
     */
    private static void move(String topic, Move m, AppProcess app, ConcurrentLinkedQueue<String> unexpected,
            java.util.Set<String> recreated, AtomicInteger moves) {
        Job j = m.job();
        try {
            HttpResponse<String> r = m.reschedule()
                    ? app.send("PATCH", "/jobs/" + topic + "/" + j.id(), "{\"runAt\":\"" + Instant.ofEpochMilli(j.runAt()) + "\"}")
                    : app.post("/jobs", j.json(topic, false, "replace"));
            int s = r.statusCode();
            if (s == 200) {
                moves.incrementAndGet();
            } else if (s == 201 && !m.reschedule()) {
                recreated.add(j.id());
            } else if (s != 404 && s != 409) {
                unexpected.add(j.id() + " " + s + " " + r.body());
            }
        } catch (IllegalStateException e) {
            // the replica was killed meanwhile
        }
    }
}
