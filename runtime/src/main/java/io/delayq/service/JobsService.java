package io.delayq.service;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.delayq.core.CancelOutcome;
import io.delayq.core.IdTakenException;
import io.delayq.core.InvalidJobException;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.JobValidator;
import io.delayq.core.Jobs;
import io.delayq.core.NewJob;
import io.delayq.core.RescheduleResult;
import io.delayq.ops.DelayqMetrics;
import io.delayq.ops.tracing.JobTracing;
import io.delayq.store.EnqueueOutcome;
import io.delayq.store.Inspection;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.delayq.store.StoreUnavailableException;
import io.vertx.core.Future;

/**
 * {@link Jobs} over the store: each request checked by the {@link JobValidator}, enqueued one
 * atomic script per topic partition ({@link JobQueue}), read and changed through
 * {@link Inspection}, counted in the metrics and carried in the caller's trace. The
 * {@link io.delayq.core.ReactiveJobs} bean ({@link ReactiveJobsService}) runs on its futures.
 */
@ApplicationScoped
public class JobsService implements Jobs {
    private final JobQueue store;
    private final Inspection inspection;
    private final JobValidator validator;
    private final ObjectMapper mapper;
    private final DelayqMetrics metrics;
    private final JobTracing tracing;
    /**
     * Where an enqueue inside a transaction goes: after-commit ({@link AfterCommitEnqueue}, with a
     * transaction manager) and the transactional outbox (quarkus-delayq-outbox); each takes the
     * jobs only in its own {@code delayq.transactions} mode. See {@link #divertible}.
     */
    @Inject
    Instance<TransactionalEnqueue> transactional;
    private volatile List<TransactionalEnqueue> diverters;

    public JobsService(JobQueue store, Inspection inspection, JobValidator validator, ObjectMapper mapper, DelayqMetrics metrics,
            JobTracing tracing) {
        this.store = store;
        this.inspection = inspection;
        this.validator = validator;
        this.mapper = mapper;
        this.metrics = metrics;
        this.tracing = tracing;
    }

    @Override
    public JobInfo schedule(JobRequest request) {
        return scheduleAll(List.of(newJob(request, ""))).get(0);
    }

    /**
     * The request as the store takes it: the payload written as JSON, every rule checked
     * ({@link InvalidJobException} names the field, under {@code prefix} when not empty).
     */
    NewJob newJob(JobRequest request, String prefix) {
        try {
            return validator.validate(request, mapper);
        } catch (InvalidJobException e) {
            throw prefix.isEmpty() ? e : e.inItem(prefix);
        }
    }

    @Override
    public Optional<JobInfo> get(String topic, String id) {
        return store.await(getAsync(topic, id));
    }

    /** As {@link #get}, holding no thread; the checks throw before anything is sent. */
    Future<Optional<JobInfo>> getAsync(String topic, String id) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        return inspection.getAsync(topic, id);
    }

    @Override
    public CancelOutcome cancel(String topic, String id) {
        return store.await(cancelAsync(topic, id));
    }

    /** As {@link #cancel}, holding no thread; the checks throw before anything is sent. */
    public Future<CancelOutcome> cancelAsync(String topic, String id) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        return inspection.cancelCodeAsync(topic, id).map(code -> {
            if (code == 1 || code == 2) { // counted once: not again for a job marked already
                metrics.cancelled(topic);
            }
            return Inspection.cancelOutcome(code);
        });
    }

    @Override
    public RescheduleResult reschedule(String topic, String id, Instant runAt) {
        if (runAt == null) {
            throw new InvalidJobException("runAt", "runAt is required");
        }
        return reschedule(topic, id, validator.timing(null, runAt));
    }

    @Override
    public RescheduleResult reschedule(String topic, String id, Duration delay) {
        if (delay == null) {
            throw new InvalidJobException("delayMs", "delayMs is required");
        }
        return reschedule(topic, id, validator.timing(JobValidator.millis(delay), null));
    }

    @Override
    public RescheduleResult reschedule(String topic, String id, JobValidator.Timing when) {
        JobValidator.checkTopic("topic", topic);
        JobValidator.checkId("id", id);
        return inspection.reschedule(topic, id, when.delayed(), when.millis());
    }

    @Override
    public List<JobInfo> scheduleAll(List<NewJob> jobs) {
        return store.await(scheduleAllAsync(jobs));
    }

    @Override
    public Future<List<JobInfo>> scheduleAllAsync(List<NewJob> jobs, String traceparent) {
        String trace = JobTracing.forEnqueue(tracing.currentContext(), traceparent);
        Future<List<JobInfo>> diverted = divertible(jobs, trace);
        return diverted != null ? diverted : sendAsync(jobs, trace);
    }

    /**
     * Sends validated jobs to Redis now, inside a transaction or not: {@link #scheduleAllAsync}
     * once no {@link TransactionalEnqueue} took them, and what after-commit sends at the commit.
     * {@code trace} is the compact W3C context the jobs keep.
     */
    public Future<List<JobInfo>> sendAsync(List<NewJob> jobs, String trace) {
        Map<Partition, List<Integer>> byPartition = new LinkedHashMap<>();
        for (int i = 0; i < jobs.size(); i++) {
            NewJob job = jobs.get(i);
            byPartition.computeIfAbsent(store.partitionOf(job.topic(), job.id(), job.group()), p -> new ArrayList<>()).add(i);
        }
        JobInfo[] out = new JobInfo[jobs.size()];
        Map<Partition, List<NewJob>> parts = new LinkedHashMap<>();
        byPartition.forEach((p, at) -> parts.put(p, at.stream().map(jobs::get).toList()));
        // An id is one job per topic: over several partitions, every id is claimed (or found taken:
        // the batch is refused, nothing written) before any partition is written.
        Future<JobQueue.Claims> claimed = store.claimAllAsync(parts).recover(failure -> Future.failedFuture(inItem(failure, jobs)));
        Future<Void> done = claimed.mapEmpty();
        for (Map.Entry<Partition, List<Integer>> e : byPartition.entrySet()) {
            List<NewJob> part = parts.get(e.getKey());
            done = done.compose(v -> store.enqueueAsync(e.getKey(), part, trace, claimed.result()).recover(failure -> Future
                    .failedFuture(failure instanceof StoreUnavailableException u ? unavailable(u, jobs, out, e.getValue())
                            : inItem(failure, jobs)))).map(results -> {
                int created = 0;
                for (int j = 0; j < results.size(); j++) {
                    out[e.getValue().get(j)] = results.get(j);
                    created += results.get(j).created() ? 1 : 0;
                }
                metrics.enqueued(e.getKey().topic(), created);
                return null;
            });
        }
        // The claims stand only while their jobs live, once marked done; a call whose outcome is
        // unknown (Redis away) leaves them pending: they lapse. Those of the jobs written are done.
        return done.transform(ran -> (claimed.succeeded()
                ? store.claimsDone(claimed.result(), !(ran.cause() instanceof StoreUnavailableException))
                : Future.<Void> succeededFuture()).transform(v -> ran.succeeded() ? Future.succeededFuture(List.of(out))
                        : Future.<List<JobInfo>> failedFuture(ran.cause())));
    }

    /** An id refused ({@link IdTakenException}) in a call of several jobs: named as the item it is. */
    private static Throwable inItem(Throwable failure, List<NewJob> jobs) {
        if (failure instanceof IdTakenException t && jobs.size() > 1 && "group".equals(t.field())) {
            for (int i = 0; i < jobs.size(); i++) {
                if (jobs.get(i).id().equals(t.id())) {
                    return t.inItem("jobs[" + i + "]");
                }
            }
        }
        return failure;
    }

    /**
     * The jobs' replies when a {@link TransactionalEnqueue} took them (the caller is inside a
     * transaction they commit with), null when they go to Redis now.
     */
    private Future<List<JobInfo>> divertible(List<NewJob> jobs, String trace) {
        List<TransactionalEnqueue> all = diverters;
        if (all == null) {
            // Resolved once (client proxies): every enqueue, the REST API's on an event loop too,
            // passes here.
            all = transactional == null ? List.of() : transactional.stream().toList();
            diverters = all;
        }
        if (all.isEmpty()) {
            return null;
        }
        try {
            for (TransactionalEnqueue t : all) {
                List<JobInfo> held = t.divert(jobs, trace);
                if (held != null) {
                    return Future.succeededFuture(held);
                }
            }
            return null;
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
    }

    /**
     * The failure of one partition's script, with what is known of every job of the request: the
     * partitions before it are written ({@code out} holds their results), its own may or may not
     * be (Redis refused it, or it timed out), the later ones were never sent.
     */
    private static StoreUnavailableException unavailable(StoreUnavailableException failure, List<NewJob> jobs,
            JobInfo[] out, List<Integer> failed) {
        List<EnqueueOutcome> outcomes = new ArrayList<>(jobs.size());
        java.util.Set<Integer> inFailed = new java.util.HashSet<>(failed);
        for (int i = 0; i < jobs.size(); i++) {
            EnqueueOutcome.Stored stored = out[i] != null ? EnqueueOutcome.Stored.STORED
                    : inFailed.contains(i) && !failure.refused() ? EnqueueOutcome.Stored.UNKNOWN
                            : EnqueueOutcome.Stored.NOT_STORED;
            outcomes.add(new EnqueueOutcome(jobs.get(i).id(), jobs.get(i).topic(), stored));
        }
        return failure.naming(outcomes);
    }
}
