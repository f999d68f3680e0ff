package io.delayq.service;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import jakarta.transaction.Status;
import jakarta.transaction.Synchronization;
import jakarta.transaction.TransactionSynchronizationRegistry;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.delayq.core.JobInfo;
import io.delayq.core.NewJob;
import io.delayq.core.TransactionMode;
import io.delayq.store.JobQueue;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * {@code delayq.transactions=after-commit} (the default with a JTA transaction manager): an enqueue
 * made inside an active transaction is held until the transaction ends, sent to Redis when it
 * commits and dropped when it rolls back. Not lossless: a send that fails after the commit is
 * retried for {@link #RETRY_FOR}, then logged at ERROR with the jobs and counted in
 * {@code delayq_after_commit_lost_total} (the transactional outbox is the lossless way).
 * <p>
 * No bean-defining annotation: the deployment module registers it only when the application has
 * a transaction manager, so the JTA API is needed only then.
 */
public class AfterCommitEnqueue implements TransactionalEnqueue {
    private static final Logger LOG = Logger.getLogger(AfterCommitEnqueue.class);
    /** How long a send after the commit is retried before its jobs are given up, logged and counted. */
    static final Duration RETRY_FOR = Duration.ofSeconds(30);
    private static final long RETRY_EVERY_MS = 1_000;

    private final TransactionSynchronizationRegistry registry;
    private final JobsService jobs;
    private final JobQueue queue;
    private final Counter lost;
    private final boolean on;

    public AfterCommitEnqueue(TransactionSynchronizationRegistry registry, JobsService jobs, JobQueue queue,
            DelayqConfig config, MeterRegistry meters) {
        this.registry = registry;
        this.jobs = jobs;
        this.queue = queue;
        this.on = config.transactions().orElse(TransactionMode.AFTER_COMMIT) == TransactionMode.AFTER_COMMIT;
        this.lost = Counter.builder("delayq.after.commit.lost")
                .description("Jobs enqueued inside a transaction that committed, and not sent to Redis within 30 s after it")
                .register(meters);
    }

    @Override
    public List<JobInfo> divert(List<NewJob> batch, String trace) {
        if (!on || registry.getTransactionKey() == null) {
            return null;
        }
        int status = registry.getTransactionStatus();
        if (status != Status.STATUS_ACTIVE && status != Status.STATUS_MARKED_ROLLBACK) {
            return null;
        }
        // One holder per transaction, so that its enqueues are sent in the order they were made
        // (a replace after the enqueue it changes).
        Held held = (Held) registry.getResource(Held.class);
        if (held == null) {
            held = new Held();
            registry.putResource(Held.class, held);
            registry.registerInterposedSynchronization(held);
        }
        held.batches.add(new Batch(batch, trace));
        long now = System.currentTimeMillis();
        List<JobInfo> out = new ArrayList<>(batch.size());
        for (NewJob job : batch) {
            out.add(JobInfo.pendingCommit(job.id(), job.topic(),
                    java.time.Instant.ofEpochMilli(job.delayed() ? now + job.millis() : job.millis())));
        }
        return out;
    }

    private record Batch(List<NewJob> jobs, String trace) {
    }

    /** A transaction's enqueues, sent in order once it committed. */
    private final class Held implements Synchronization {
        final List<Batch> batches = new ArrayList<>();

        @Override
        public void beforeCompletion() {
        }

        @Override
        public void afterCompletion(int status) {
            if (status != Status.STATUS_COMMITTED) {
                return;
            }
            // The first try on the committing thread, so that in the common case the jobs are in
            // Redis when the transactional method returns; retries on a thread of their own.
            int sent = 0;
            try {
                for (Batch b : batches) {
                    queue.await(jobs.sendAsync(b.jobs, b.trace));
                    sent++;
                }
            } catch (RuntimeException e) {
                List<Batch> left = List.copyOf(batches.subList(sent, batches.size()));
                LOG.warnf("delayq: sending %d job(s) after their transaction committed failed (%s); retrying for %d s",
                        count(left), e.getMessage(), RETRY_FOR.toSeconds());
                Thread.ofVirtual().name("delayq-after-commit").start(() -> retry(left));
            }
        }
    }

    private void retry(List<Batch> left) {
        long deadline = System.nanoTime() + RETRY_FOR.toNanos();
        int sent = 0;
        RuntimeException last = null;
        while (sent < left.size() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(RETRY_EVERY_MS);
                Batch b = left.get(sent);
                queue.await(jobs.sendAsync(b.jobs, b.trace));
                sent++;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (RuntimeException e) {
                last = e;
            }
        }
        if (sent < left.size()) {
            List<Batch> given = left.subList(sent, left.size());
            int n = count(given);
            lost.increment(n);
            LOG.errorf("delayq: %d job(s) of a committed transaction were not sent to Redis within %d s and are lost: %s (%s)",
                    n, RETRY_FOR.toSeconds(), given.stream().flatMap(b -> b.jobs.stream())
                            .map(j -> j.topic() + "/" + j.id()).collect(Collectors.joining(", ")),
                    last == null ? "interrupted" : last.getMessage());
        }
    }

    private static int count(List<Batch> batches) {
        return batches.stream().mapToInt(b -> b.jobs.size()).sum();
    }
}
