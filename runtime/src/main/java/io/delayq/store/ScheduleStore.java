package io.delayq.store;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import org.jboss.logging.Logger;

import io.delayq.core.JobInfo;
import io.delayq.core.NewJob;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * Recurring schedules: the definitions made over REST (a hash, with a revision every change
 * raises), and their ticks, fired into the partition of the tick's job by the enqueue script,
 * which keeps the tick records that let every replica try a tick while one enqueues it.
 */
@Singleton
public class ScheduleStore extends StorePart {
    private static final Logger LOG = Logger.getLogger(ScheduleStore.class);
    private final JobQueue queue;

    @Inject
    public ScheduleStore(StoreLayer layer, JobQueue queue) {
        super(layer);
        this.queue = queue;
    }

    /**
     * Fires one tick of a recurring schedule into the partition of its job: enqueues {@code job}
     * (or, when null, records the tick as skipped) unless the schedule already fired or skipped a
     * tick at or after {@code tickMs} into this partition. Every replica may call this for the
     * same tick; one of them enqueues it. With {@code noOverlap} (the schedule's overlap is skip,
     * and {@code p} the partition of its name, where all its ticks go) the tick is recorded as
     * skipped instead while the job of the schedule's previous tick there is scheduled or running.
     */
    public TickOutcome tick(Partition p, String schedule, long tickMs, NewJob job, boolean noOverlap) {
        List<NewJob> jobs = job == null ? List.of() : List.of(job);
        Response reply;
        try {
            reply = redis.await(queue.enqueueScript(p, jobs, "", schedule, tickMs + (noOverlap ? "o" : "")));
        } catch (io.delayq.core.IdTakenException e) {
            if (e.retryable()) {
                // Only an enqueue of the id on its way elsewhere, which may never land: the tick is
                // not recorded, the ticker's next pass (in a second) tries it again.
                throw e;
            }
            // The tick's job id is a job of the topic with a group, in another partition (an
            // enqueue took it): the tick cannot fire. Recorded as skipped, so no replica tries again.
            LOG.warnf("recurring schedule %s: tick %d not fired: %s", schedule, tickMs, e.getMessage());
            return tick(p, schedule, tickMs, null, false);
        }
        long now = reply.get(0).toLong();
        if (reply.size() == 2 && reply.get(1).toInteger() == -1) {
            return new TickOutcome(now, false, null, false);
        }
        if (reply.size() == 2 && reply.get(1).toInteger() == -2) {
            return new TickOutcome(now, true, null, true);
        }
        return new TickOutcome(now, true, job == null ? null : queue.counted(p, jobs, reply).get(0), false);
    }

    /**
     * What {@link #tick} did: {@code redisNowMs} is Redis' clock when it ran; {@code fired} this
     * call settled the tick (its job, or none: a missed tick skipped, or {@code overlapped}, skipped
     * because the previous tick's job was still there).
     */
    public record TickOutcome(long redisNowMs, boolean fired, JobInfo job, boolean overlapped) {
    }

    /**
     * Enqueues the jobs of a backfill (ids of ticks, due now) with ifExists keep: an id whose job
     * exists, or that the topic's dedup window remembers, writes nothing. Into the partition of
     * {@code name} when given (a schedule whose overlap is skip keeps its ticks there), else each
     * into its id's. Returns how many were created. An id found taken in another partition (a tick
     * fired before the schedule's overlap policy changed) counts as existing.
     */
    public int backfill(String topic, String name, List<NewJob> jobs) {
        java.util.Map<Partition, List<NewJob>> parts = new java.util.LinkedHashMap<>();
        for (NewJob job : jobs) {
            parts.computeIfAbsent(partitionOf(topic, name != null ? name : job.id()), x -> new ArrayList<>()).add(job);
        }
        int created = 0;
        for (var e : parts.entrySet()) {
            try {
                created += created(redis.await(queue.enqueueAsync(e.getKey(), e.getValue(), "")));
            } catch (io.delayq.core.IdTakenException taken) {
                for (NewJob job : e.getValue()) { // one by one: the others still go in
                    try {
                        created += created(redis.await(queue.enqueueAsync(e.getKey(), List.of(job), "")));
                    } catch (io.delayq.core.IdTakenException alsoTaken) {
                        // exists elsewhere: skipped
                    }
                }
            }
        }
        return created;
    }

    private static int created(List<JobInfo> infos) {
        return (int) infos.stream().filter(JobInfo::created).count();
    }

    /** The schedules created over REST: name → definition (JSON, see io.delayq.schedule). */
    public Map<String, String> scheduleDefinitions() {
        return pairs(redis.send(Request.cmd(Command.HGETALL).arg(keys.schedules())));
    }

    /** The definition (JSON) of a schedule made over REST, null when there is none. */
    public String scheduleDefinition(String name) {
        Response r = redis.send(Request.cmd(Command.HGET).arg(keys.schedules()).arg(name));
        return r == null ? null : r.toString();
    }

    /**
     * Stores a schedule's definition if the one in Redis is still {@code read} (null: there was
     * none), in one atomic step (schedput.lua): a read-modify-write (PUT, pause, resume) whose read
     * another replica's write made stale writes nothing. Returns empty when it wrote nothing (read
     * again and redo the change), else whether the name was new.
     */
    public Optional<Boolean> putScheduleIf(String name, String read, String definition) {
        long r = redis.await(scripts.runAsync("schedput", List.of(keys.schedules()),
                List.of("0", name, read == null ? "0" : "1", read == null ? "" : read, definition), null)).toLong();
        if (r < 0) {
            return Optional.empty();
        }
        schedulesChanged();
        return Optional.of(r == 1);
    }

    /**
     * Raises the schedules' revision after a change: the other replicas' safety-net polls see it
     * and re-read the schedules. (Should this fail, they re-read within a minute anyway.)
     */
    private void schedulesChanged() {
        try {
            redis.send(Request.cmd(Command.INCR).arg(keys.schedulesRevision()));
        } catch (RuntimeException e) {
            // The change itself is stored: a 503 now would make the caller think it was not.
            LOG.warnf("the schedules' revision was not raised (the other replicas see the change within a minute): %s",
                    e.toString());
        }
    }

    /** Deletes a schedule's definition; true when it existed. */
    public boolean deleteSchedule(String name) {
        boolean existed = redis.send(Request.cmd(Command.HDEL).arg(keys.schedules()).arg(name)).toInteger() == 1;
        schedulesChanged();
        return existed;
    }

    /**
     * Fences a schedule off the partitions of {@code topic}: its tick record there becomes at
     * least {@code untilMs}, so the enqueue script refuses every tick up to then — a replica that
     * has not yet seen a deletion or a change of topic cannot enqueue a tick of the old
     * definition there (the record is compared in the same atomic step as the write).
     */
    public void fenceTicks(String name, String topic, long untilMs) {
        fenceTicks(name, topic, untilMs, false);
    }

    /**
     * As {@link #fenceTicks(String, String, long)}; with {@code deleted} (the schedule is deleted)
     * the partitions also forget the job of its last tick (kept for its overlap check), so a
     * deleted schedule leaves only its tick records.
     */
    public void fenceTicks(String name, String topic, long untilMs, boolean deleted) {
        for (Partition p : partitionsOf(topic)) {
            run("fence", p, Set.of(), List.of(name, Long.toString(untilMs), deleted ? "1" : "0"));
        }
    }

    /** The last tick (epoch ms) a schedule fired or skipped into any partition of {@code topic}; -1 when none. */
    public long lastTick(String name, String topic) {
        ensureLayout();
        List<Request> reads = new ArrayList<>(partitions);
        for (Partition p : partitionsOf(topic)) {
            reads.add(Request.cmd(Command.HGET).arg(keys.ticks(p)).arg(name));
        }
        long last = -1;
        for (Response r : readAll(reads)) {
            if (r != null) {
                last = Math.max(last, r.toLong());
            }
        }
        return last;
    }

    /**
     * The schedules' revision as the last safety-net poll read it (see
     * {@link JobQueue#recentSchedulesRevision}): it rides along with the poll's heads.
     */
    public String recentSchedulesRevision(long maxAgeMs) {
        return queue.recentSchedulesRevision(maxAgeMs);
    }
}
