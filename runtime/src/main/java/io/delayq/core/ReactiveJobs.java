package io.delayq.core;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import io.smallrye.mutiny.Uni;

/**
 * {@link Jobs} for reactive code: the same operations, rules, metrics and trace propagation, as
 * {@code Uni}s that hold no thread while Redis works (the Redis client's futures all the way
 * down), so they may be called and subscribed to on an event loop. Nothing happens until a
 * subscription; each subscription sends anew. A broken rule fails the {@code Uni} with
 * {@link InvalidJobException} before anything is written; Redis unreachable fails it with
 * {@link io.delayq.store.StoreUnavailableException} (nothing written); an enqueue that did not
 * reach {@code delayq.durability.replicas} in time with {@link io.delayq.store.NotReplicatedException}.
 * The {@code Uni}s may complete on a Vert.x event loop: what follows them must not block. Inject
 * it; the extension provides the one implementation (io.delayq.service.ReactiveJobsService).
 */
public interface ReactiveJobs {
    /** Schedules {@code payload} on {@code topic} to run after {@code delay}, under a generated id. */
    default Uni<JobInfo> schedule(String topic, Object payload, Duration delay) {
        return schedule(JobRequest.topic(topic).payload(payload).delay(delay));
    }

    /** As {@link Jobs#schedule(JobRequest)}: an existing id answers its existing job (unless {@link JobRequest#ifExists}). */
    Uni<JobInfo> schedule(JobRequest request);

    /**
     * Schedules several jobs, one atomic script per topic partition; results in input order. Every
     * request is checked before anything is written: a broken rule names the item
     * ({@code requests[3].delayMs}).
     */
    Uni<List<JobInfo>> scheduleAll(List<JobRequest> requests);

    /** As {@link Jobs#get}: empty when there is no such job. */
    Uni<Optional<JobInfo>> get(String topic, String id);

    /** As {@link Jobs#cancel}: a job already running is stopped ({@link CancelOutcome#CANCELLING}). */
    Uni<CancelOutcome> cancel(String topic, String id);
}
