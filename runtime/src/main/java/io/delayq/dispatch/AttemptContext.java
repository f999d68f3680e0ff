package io.delayq.dispatch;

/**
 * What surrounds code that runs on behalf of one attempt: the job in the logging context (MDC)
 * and the attempt's span current. A handler enters it on every thread that runs the observer —
 * the worker thread for synchronous observers, the executor's thread for asynchronous ones —
 * and leaves it before the thread goes back to other work.
 */
@FunctionalInterface
public interface AttemptContext {
    /** Makes the context current on this thread until the returned scope is closed. */
    Entered enter();

    /** A context made current; closing removes it from the thread. */
    interface Entered extends AutoCloseable {
        @Override
        void close();
    }
}
