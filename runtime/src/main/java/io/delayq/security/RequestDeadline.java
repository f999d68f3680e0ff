package io.delayq.security;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpVersion;
import io.vertx.ext.web.Router;

/**
 * {@code delayq.http.read-timeout}: a request whose body has not fully arrived that long after its
 * headers did is answered 408 and its connection closed. A client that opens requests and then
 * sends their bodies a byte at a time (or never) would otherwise hold a connection, and the memory
 * of what it sent so far, for as long as it likes. The header phase is bounded by
 * {@link HeaderDeadline} ({@code delayq.http.header-timeout}), which this route tells when a
 * request's headers have arrived.
 * <p>
 * It polls the request once, when the deadline passes, and sets no handler on it: the body's
 * reader (RESTEasy, a body handler) keeps the request's own handlers to itself.
 */
@ApplicationScoped
public class RequestDeadline {
    private static final Logger LOG = Logger.getLogger(RequestDeadline.class);

    void install(@Observes Router router, DelayqConfig config) {
        java.time.Duration timeout = config.http().readTimeout();
        boolean bodies = !(timeout.isZero() || timeout.isNegative());
        java.time.Duration headers = config.http().headerTimeout();
        if (!bodies && (headers.isZero() || headers.isNegative())) {
            return;
        }
        long ms = Math.max(1, timeout.toMillis());
        // First of all routes: the deadline counts from the headers, whoever reads the body.
        router.route().order(Integer.MIN_VALUE).handler(rc -> {
            HttpServerRequest request = rc.request();
            HeaderDeadline.requestStarted(request, rc);
            if (bodies && !request.isEnded()) {
                long timer = rc.vertx().setTimer(ms, id -> expire(request, ms));
                rc.addEndHandler(v -> rc.vertx().cancelTimer(timer));
            }
            rc.next();
        });
    }

    private static void expire(HttpServerRequest request, long ms) {
        if (request.isEnded()) {
            return;
        }
        LOG.debugf("%s %s from %s: body not complete %d ms after its headers; 408 and closed", request.method(),
                request.path(), request.remoteAddress(), ms);
        if (!request.response().headWritten()) {
            request.response().setStatusCode(408).putHeader(HttpHeaders.CONTENT_TYPE, "application/problem+json")
                    .putHeader(HttpHeaders.CONNECTION, "close")
                    .end("{\"type\":\"about:blank\",\"title\":\"Request Timeout\",\"status\":408,\"detail\":\"the request's"
                            + " body did not arrive within delayq.http.read-timeout (" + ms + " ms)\"}");
        }
        if (request.version() == HttpVersion.HTTP_2) {
            request.response().reset(); // this stream only: the connection carries others
        } else {
            request.connection().close();
        }
    }
}
