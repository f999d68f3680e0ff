package io.delayq.dispatch;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.spi.EventContext;
import jakarta.enterprise.inject.spi.ObserverMethod;

import org.jboss.logging.Logger;

import io.quarkus.arc.AsyncObserverExceptionHandler;

/**
 * ArC logs every exception of an {@code @ObservesAsync} observer at ERROR. For job observers an
 * exception is an ordinary failed attempt that delayq records (retry or dead, with the error),
 * so it is logged at DEBUG here; exceptions of other async observers keep their ERROR.
 */
@ApplicationScoped
public class QuietAsyncObserverFailures implements AsyncObserverExceptionHandler {
    private static final Logger LOG = Logger.getLogger(QuietAsyncObserverFailures.class);

    @Override
    public void handle(Throwable throwable, ObserverMethod<?> observerMethod, EventContext<?> eventContext) {
        if (eventContext.getEvent() instanceof io.delayq.core.Job job) {
            LOG.debugf("async observer of %s failed: %s", job, throwable.toString());
        } else {
            LOG.errorf(throwable, "failure in async observer %s", observerMethod);
        }
    }
}
