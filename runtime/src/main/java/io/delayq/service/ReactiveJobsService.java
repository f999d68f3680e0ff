package io.delayq.service;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

import jakarta.enterprise.context.ApplicationScoped;

import io.delayq.core.CancelOutcome;
import io.delayq.core.JobInfo;
import io.delayq.core.JobRequest;
import io.delayq.core.NewJob;
import io.delayq.core.ReactiveJobs;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Future;

/**
 * {@link ReactiveJobs} on the futures of {@link JobsService}: its rules, metrics and trace
 * propagation, each call deferred to the subscription.
 */
@ApplicationScoped
public class ReactiveJobsService implements ReactiveJobs {
    private final JobsService jobs;

    public ReactiveJobsService(JobsService jobs) {
        this.jobs = jobs;
    }

    @Override
    public Uni<JobInfo> schedule(JobRequest request) {
        return uni(() -> jobs.scheduleAllAsync(List.of(jobs.newJob(request, "")))).map(all -> all.get(0));
    }

    @Override
    public Uni<List<JobInfo>> scheduleAll(List<JobRequest> requests) {
        return uni(() -> {
            List<NewJob> valid = new ArrayList<>(requests.size());
            for (int i = 0; i < requests.size(); i++) {
                valid.add(jobs.newJob(requests.get(i), "requests[" + i + "]"));
            }
            return jobs.scheduleAllAsync(valid);
        });
    }

    @Override
    public Uni<Optional<JobInfo>> get(String topic, String id) {
        return uni(() -> jobs.getAsync(topic, id));
    }

    @Override
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
