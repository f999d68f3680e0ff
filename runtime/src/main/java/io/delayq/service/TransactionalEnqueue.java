package io.delayq.service;

import java.util.List;

import io.delayq.core.JobInfo;
import io.delayq.core.NewJob;

/**
 * Where an enqueue made inside the caller's transaction goes instead of Redis now: the hook of
 * after-commit ({@link AfterCommitEnqueue}) and of the transactional outbox (quarkus-delayq-outbox,
 * which writes jobs as rows of the service's own database without the extension knowing JDBC).
 * {@link JobsService} consults the beans of this type for every enqueue through
 * {@link io.delayq.core.Jobs} or {@link io.delayq.core.ReactiveJobs} (single jobs and batches),
 * after the jobs passed validation and before anything is sent; the first that takes the jobs
 * answers (each takes them only in its own {@code delayq.transactions} mode). Implementations
 * are {@code @ApplicationScoped} beans: the service resolves them once.
 */
public interface TransactionalEnqueue {
    /**
     * Takes the jobs when the calling thread is inside a transaction they must commit with, and
     * answers each one as {@link JobInfo#pendingCommit}, in input order; null when there is no
     * such transaction, and the jobs go to Redis now, as without this hook.
     *
     * @param trace the compact W3C context of the enqueue (empty when it ran in no trace), kept
     *        with the jobs as Redis would keep it
     * @throws RuntimeException when the jobs could not be written (nothing of them is kept: the
     *         caller's transaction decides the rest)
     */
    List<JobInfo> divert(List<NewJob> jobs, String trace);
}
