package io.delayq.core;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

import jakarta.enterprise.context.ApplicationScoped;

import io.smallrye.mutiny.Uni;
import io.vertx.core.Future;

/**
 * {@link Jobs} for reactive code: the same operations, rules, metrics and trace propagation, as
 * {@code Uni}s that hold no thread while Redis works (the Redis client's futures all the way
 * down), so they may be called and subscribed to on an event loop. Nothing happens until a
 * subscription; each subscription sends anew. A broken rule fails the {@code Uni} with
 * {@link InvalidJobException} before anything is written; Redis unreachable fails it with
 * {@link io.delayq.store.StoreUnavailableException} (nothing written); an enqueue that did not
 * reach {@code delayq.durability.replicas} in time with {@link io.delayq.store.NotReplicatedException}.
 * The {@code Uni}s may complete on a Vert.x event loop: what follows them must not block.
 */
@ApplicationScoped
public class ReactiveJobs {
    private final Jobs jobs;

    public ReactiveJobs(Jobs jobs) {
        this.jobs = jobs;
    }

    /** Schedules {@code payload} on {@code topic} to run after {@code delay}, under a generated id. */
    public Uni<JobInfo> schedule(String topic, Object payload, Duration delay) {
        return schedule(JobRequest.topic(topic).payload(payload).delay(delay));
    }

    /** As {@link Jobs#schedule(JobRequest)}: an existing id answers its existing job (unless {@link JobRequest#ifExists}). */
    public Uni<JobInfo> schedule(JobRequest request) {
        return uni(() -> jobs.scheduleAllAsync(List.of(jobs.newJob(request, "")))).map(all -> all.get(0));
    }

    /**
     * Schedules several jobs, one atomic script per topic partition; results in input order. Every
     * request is checked before anything is written: a broken rule names the item
     * ({@code requests[3].delayMs}).
     */
    public Uni<List<JobInfo>> scheduleAll(List<JobRequest> requests) {
        return uni(() -> {
            List<NewJob> valid = new ArrayList<>(requests.size());
            for (int i = 0; i < requests.size(); i++) {
                valid.add(jobs.newJob(requests.get(i), "requests[" + i + "]"));
            }
            return jobs.scheduleAllAsync(valid);
        });
    }

    /** As {@link Jobs#get}: empty when there is no such job. */
    public Uni<Optional<JobInfo>> get(String topic, String id) {
        return uni(() -> jobs.getAsync(topic, id));
    }

    /** As {@link Jobs#cancel}: a job already running is not stopped. */
    public Uni<CancelOutcome> cancel(String topic, String id) {
        return uni(() -> jobs.cancelAsync(topic, id));
    }

    /**
     * Deferred to the subscription (a throw there, such as a broken rule, fails the {@code Uni}),
     * so that the trace context is the subscriber's, as for a blocking call.
     */
    private static <T> Uni<T> uni(Supplier<Future<T>> call) {
        return Uni.createFrom().deferred(() -> Uni.createFrom().completionStage(call.get().toCompletionStage()));
    }
}
