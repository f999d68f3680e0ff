package io.delayq.schedule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import io.delayq.dev.Resp;
import io.delayq.support.AppProcess;
import io.delayq.support.OwnRedisTest;
import io.delayq.support.Receiver;
import io.delayq.support.Topics;

/**
 * Recurring schedules on replicas that are real processes of the packaged application, sharing
 * one Redis and no leader: one job per tick, through a SIGKILL and through an outage of every
 * replica (both misfire policies).
 */
class SchedulesIT extends OwnRedisTest {
    private static final String[] FAST_LEASES = { "delayq.dispatch.lease", "2s", "delayq.dispatch.heartbeat", "500ms",
            "delayq.dispatch.reclaim-interval", "500ms" };

    private static Map<String, String> settings(Receiver receiver, String... schedules) {
        Map<String, String> s = new HashMap<>();
        for (int i = 0; i < FAST_LEASES.length; i += 2) {
            s.put(FAST_LEASES[i], FAST_LEASES[i + 1]);
        }
        // name, topic, every, misfire
        for (int i = 0; i < schedules.length; i += 4) {
            String p = "delayq.schedules." + schedules[i] + ".";
            s.put(p + "topic", schedules[i + 1]);
            s.put(p + "every", schedules[i + 2]);
            s.put(p + "misfire", schedules[i + 3]);
            s.put(p + "payload", "{\"schedule\":\"" + schedules[i] + "\"}");
            s.put("delayq.topics." + schedules[i + 1] + ".http.url", receiver.url());
        }
        return s;
    }

    /**
     * The ticks (epoch ms) delivered for a schedule, in order, and how many first attempts each
     * had: a tick enqueued twice would show two first attempts; so does a job redelivered after its
     * replica was killed mid-delivery (a lost attempt is no attempt), but only across the kill.
     */
    private static TreeSet<Long> ticks(Receiver receiver, String name, Map<Long, Integer> firstAttempts) {
        TreeSet<Long> out = new TreeSet<>();
        receiver.deliveries.forEach((id, d) -> {
            if (id.startsWith(name + ":")) {
                long t = Long.parseLong(id.substring(name.length() + 1));
                out.add(t);
                firstAttempts.put(t, (int) d.stream().filter(x -> x.attempt() == 1).count());
            }
        });
        return out;
    }

    /** How long the receiver holds each job of the overlap=skip schedule: several ticks long. */
    private static final long OVERLAP_HOLD_MS = 3500;

    @Test
    void threeReplicasFireOneJobPerTickAndStillDoAfterOneIsKilled() throws Exception {
        String topic = Topics.fresh("ticks");
        // Beside it, two schedules made over REST: one with overlap=skip whose jobs run for several
        // ticks, and one paused through another replica than the one that made it.
        String overlapTopic = Topics.fresh("no-overlap");
        String pausedTopic = Topics.fresh("paused");
        long killed;
        long pausedAt;
        try (Receiver receiver = new Receiver()) {
            receiver.holdBy(d -> overlapTopic.equals(d.topic()) ? OVERLAP_HOLD_MS : 0);
            Map<String, String> s = settings(receiver, "every-second", topic, "1s", "fire-once");
            s.put("delayq.topics." + overlapTopic + ".http.url", receiver.url());
            s.put("delayq.topics." + pausedTopic + ".http.url", receiver.url());
            try (AppProcess a = AppProcess.start("s1", redis.port(), s);
                    AppProcess b = AppProcess.start("s2", redis.port(), s);
                    AppProcess c = AppProcess.start("s3", redis.port(), s)) {
                assertEquals(201, a.send("PUT", "/schedules/no-overlap", "{\"every\":\"1s\",\"topic\":\"" + overlapTopic
                        + "\",\"overlap\":\"skip\"}").statusCode());
                assertEquals(201, a.send("PUT", "/schedules/paused-one", "{\"every\":\"1s\",\"topic\":\"" + pausedTopic
                        + "\"}").statusCode());
                Awaitility.await().atMost(Duration.ofSeconds(30))
                        .until(() -> ticks(receiver, "paused-one", new HashMap<>()).size() >= 2);
                assertEquals(200, c.send("POST", "/schedules/paused-one/pause", null).statusCode());
                pausedAt = System.currentTimeMillis();
                long started = System.currentTimeMillis();
                Awaitility.await().atMost(Duration.ofSeconds(30))
                        .until(() -> ticks(receiver, "every-second", new HashMap<>()).tailSet(started).size() >= 10);
                b.kill();
                killed = System.currentTimeMillis();
                Awaitility.await().atMost(Duration.ofSeconds(30))
                        .until(() -> ticks(receiver, "every-second", new HashMap<>()).tailSet(killed + 1000).size() >= 5);
                // A tick the killed replica held in flight runs again once its lease expired and a
                // poll found it (lease + about 2 s): wait for it before stopping the others.
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> {
                    TreeSet<Long> t = ticks(receiver, "every-second", new HashMap<>());
                    return (t.last() - t.first()) / 1000 + 1 == t.size();
                });
                Awaitility.await().atMost(Duration.ofSeconds(60))
                        .until(() -> ticks(receiver, "no-overlap", new HashMap<>()).size() >= 3);
                a.terminate();
                c.terminate();
                assertTrue(a.waitForExit(Duration.ofSeconds(30)) && c.waitForExit(Duration.ofSeconds(30)));
            }
            Map<Long, Integer> times = new HashMap<>();
            TreeSet<Long> ticks = ticks(receiver, "every-second", times);
            long first = ticks.first();
            long last = ticks.last();
            List<Long> missing = new ArrayList<>();
            for (long t = first; t <= last; t += 1000) {
                if (!ticks.contains(t)) {
                    missing.add(t);
                }
            }
            assertTrue(ticks.stream().allMatch(t -> t % 1000 == 0), "ticks on the second: " + ticks);
            long[] late = receiver.deliveries.entrySet().stream().filter(e -> e.getKey().startsWith("every-second:"))
                    .mapToLong(e -> e.getValue().get(0).receivedMs()
                            - Long.parseLong(e.getKey().substring("every-second:".length())))
                    .sorted().toArray();
            System.out.printf("SchedulesIT: %d ticks delivered, lateness p50 %d ms, p99 %d ms, max %d ms%n", late.length,
                    late[late.length / 2], late[(int) Math.min(late.length - 1, Math.ceil(late.length * 0.99) - 1)],
                    late[late.length - 1]);
            assertEquals(List.of(), missing, "every tick from the first to the last ran (" + ticks.size() + " ticks)");
            times.forEach((t, n) -> {
                List<Receiver.Delivery> d = receiver.deliveries.get("every-second:" + t);
                boolean acrossTheKill = n == 2 && d.get(0).receivedMs() <= killed && d.get(1).receivedMs() > killed;
                assertTrue(n == 1 || acrossTheKill, "tick " + t + " enqueued as " + n + " jobs (first attempts): " + d);
            });
            long redelivered = receiver.deliveries.entrySet().stream().filter(e -> e.getKey().startsWith("every-second:"))
                    .filter(e -> e.getValue().size() > 1).count();
            assertTrue(redelivered <= 2, redelivered + " ticks redelivered: only those the killed replica held");
            // Paused: no tick after the pause answered, from any replica, across the kill.
            TreeSet<Long> paused = ticks(receiver, "paused-one", new HashMap<>());
            assertTrue(paused.last() <= pausedAt, "ticks of the paused schedule after its pause (" + pausedAt + "): "
                    + paused.tailSet(pausedAt, false));
            // Overlap skip: a tick's job starts only once the previous tick's job has answered, on whichever replica.
            TreeSet<Long> ov = ticks(receiver, "no-overlap", new HashMap<>());
            Long prev = null;
            for (long t : ov) {
                if (prev != null) {
                    List<Receiver.Delivery> before = receiver.deliveries.get("no-overlap:" + prev);
                    long answered = before.get(before.size() - 1).receivedMs() + OVERLAP_HOLD_MS;
                    long began = receiver.deliveries.get("no-overlap:" + t).get(0).receivedMs();
                    assertTrue(began >= answered, "tick " + t + " began at " + began + ", before tick " + prev
                            + " ended (" + answered + ")");
                }
                prev = t;
            }
            System.out.printf("SchedulesIT: overlap=skip ran %d ticks of %d s, paused ran %d before its pause%n", ov.size(),
                    (ov.last() - ov.first()) / 1000 + 1, paused.size());
            try (Resp r = new Resp(redis.port())) {
                // Left in Redis: only ticks enqueued ahead that no replica was left to run.
                for (Object id : r.list("HKEYS", Topics.keys(topic) + "jobs")) {
                    long t = Long.parseLong(id.toString().substring("every-second:".length()));
                    assertTrue(t > last, "tick " + t + " left behind, before the last one that ran (" + last + ")");
                }
            }
        }
    }

    private static final Pattern MISSED = Pattern.compile(
            "recurring schedule (\\S+) missed its ticks from (\\S+) to (\\S+) \\(no replica could fire them\\): (.*)");

    @Test
    void ticksMissedWhileEveryReplicaWasDownFollowTheMisfirePolicy() throws Exception {
        String once = Topics.fresh("once");
        String skip = Topics.fresh("skip");
        try (Receiver receiver = new Receiver()) {
            Map<String, String> s = settings(receiver, "catch-up", once, "2s", "fire-once", "skipper", skip, "2s", "skip");
            try (AppProcess a = AppProcess.start("m1", redis.port(), s);
                    AppProcess b = AppProcess.start("m2", redis.port(), s)) {
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> ticks(receiver, "catch-up", new HashMap<>())
                        .size() >= 2 && ticks(receiver, "skipper", new HashMap<>()).size() >= 2);
                a.kill();
                b.kill();
            }
            long lastOnce;
            long lastSkip;
            try (Resp r = new Resp(redis.port())) {
                lastOnce = Long.parseLong(r.str("HGET", Topics.keys(once) + "ticks", "catch-up"));
                lastSkip = Long.parseLong(r.str("HGET", Topics.keys(skip) + "ticks", "skipper"));
                // Every replica down for more than three ticks.
                Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100))
                        .until(() -> System.currentTimeMillis() > Math.max(lastOnce, lastSkip) + 3 * 2000 + 500);
            }
            try (AppProcess a = AppProcess.start("m3", redis.port(), s);
                    AppProcess b = AppProcess.start("m4", redis.port(), s)) {
                long back = System.currentTimeMillis();
                Awaitility.await().atMost(Duration.ofSeconds(30))
                        .until(() -> ticks(receiver, "catch-up", new HashMap<>()).tailSet(back + 2000).size() >= 2
                                && ticks(receiver, "skipper", new HashMap<>()).tailSet(back + 2000).size() >= 2);
                String logs = a.logText() + b.logText();
                Map<String, Integer> recorded = new HashMap<>();
                Matcher m = MISSED.matcher(logs);
                while (m.find()) {
                    recorded.merge(m.group(1), 1, Integer::sum);
                }
                assertEquals(Map.of("catch-up", 1, "skipper", 1), recorded, "one replica recorded each misfire:\n" + logs);
                // fire-once: the latest missed tick ran once; none between the last tick before the outage and it.
                Matcher c = MISSED.matcher(logs);
                long onceFrom = -1, onceTo = -1, skipFrom = -1, skipTo = -1;
                while (c.find()) {
                    long from = java.time.Instant.parse(c.group(2)).toEpochMilli();
                    long to = java.time.Instant.parse(c.group(3)).toEpochMilli();
                    if (c.group(1).equals("catch-up")) {
                        onceFrom = from;
                        onceTo = to;
                        assertTrue(c.group(4).contains("fired the latest once"), c.group());
                    } else {
                        skipFrom = from;
                        skipTo = to;
                        assertTrue(c.group(4).contains("skipped them"), c.group());
                    }
                }
                assertEquals(lastOnce + 2000, onceFrom, "the misfire starts at the tick after the last one fired");
                assertTrue(onceTo - onceFrom >= 2 * 2000, "at least three ticks missed: " + onceFrom + ".." + onceTo);
                TreeSet<Long> onceTicks = ticks(receiver, "catch-up", new HashMap<>());
                assertEquals(List.of(onceTo), new ArrayList<>(onceTicks.subSet(lastOnce + 1, true, onceTo, true)),
                        "fire-once ran the latest missed tick and no other");
                assertEquals(lastSkip + 2000, skipFrom);
                assertTrue(skipTo - skipFrom >= 2 * 2000, "at least three ticks missed: " + skipFrom + ".." + skipTo);
                TreeSet<Long> skipTicks = ticks(receiver, "skipper", new HashMap<>());
                assertEquals(List.of(), new ArrayList<>(skipTicks.subSet(lastSkip + 1, true, skipTo, true)),
                        "skip ran none of the missed ticks");
                // Then both go on, one job per tick.
                for (java.util.NavigableSet<Long> t : List.of(onceTicks.tailSet(onceTo, true), skipTicks.tailSet(skipTo, false))) {
                    long prev = -1;
                    for (long tick : t) {
                        assertTrue(prev < 0 || tick - prev == 2000, "consecutive ticks after the outage: " + t);
                        prev = tick;
                    }
                }
            }
        }
    }
}
