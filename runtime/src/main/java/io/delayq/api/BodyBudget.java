package io.delayq.api;

import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.delayq.core.DelayqConfig;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/**
 * Bounds what request bodies of delayq's API may cost the heap, before a byte of them is read.
 * <ul>
 * <li>A body larger than the API can accept, {@link #limit}: {@code delayq.api.max-batch} jobs of
 * {@code delayq.api.max-payload-bytes} each plus their fields, is refused with 413 (not a flat
 * 80 MB for every endpoint).
 * <li>The bytes of bodies being read and parsed at once, over every request, are at most
 * {@code delayq.http.max-body-bytes-in-flight} (default an eighth of the heap): a body that would
 * go over it is answered 503 with {@code Retry-After} at once. A body costs more than its size
 * until its jobs are written (the payloads' text, the records and the script's arguments beside
 * the bytes; it was once held as bytes, text, a tree and payload substrings at once), so a dozen
 * maximum-size batches at once exhausted a 512 MB heap, and their 500s took other requests down
 * with them. One body is always admitted alone, so a maximum-size batch fits whatever the setting.
 * </ul>
 * Bodies without a {@code Content-Length} (chunked) count as the limit; Quarkus'
 * {@code quarkus.http.limits.max-body-size} cuts them off.
 */
@ApplicationScoped
public class BodyBudget {
    /** Room for a job's fields beside its payload: topic, id, times, retry, group, JSON syntax. */
    static final int PER_JOB_FIELDS = 1024;
    /** The first path segment of the API's resources that take a body. */
    private static final Set<String> ROOTS = Set.of("jobs", "topics", "schedules", "batches", "delayq");
    private final AtomicLong inFlight = new AtomicLong();

    /** The largest body the API accepts under {@code config}. */
    public static long limit(DelayqConfig config) {
        return (long) Math.max(1, config.api().maxBatch()) * (config.api().maxPayloadBytes() + PER_JOB_FIELDS) + 65536;
    }

    /**
     * The budget of body bytes in flight: the setting, else an eighth of the heap (2 x 60 MB bodies
     * peaked at 502 MB of 512 when a body was held four times over; one, parsed in one pass, peaked
     * at 285-399 MB, garbage included: bench/RESULTS.md, "Request bodies").
     */
    static long budget(DelayqConfig config) {
        return config.http().maxBodyBytesInFlight().orElse(Runtime.getRuntime().maxMemory() / 8);
    }

    /** Body bytes admitted and not yet answered (for tests and the benchmark). */
    public long inFlight() {
        return inFlight.get();
    }

    void install(@Observes Router router, DelayqConfig config) {
        long limit = limit(config);
        long budget = budget(config);
        router.route().order(Integer.MIN_VALUE + 1).handler(rc -> admit(rc, limit, budget));
    }

    private void admit(RoutingContext rc, long limit, long budget) {
        HttpServerRequest request = rc.request();
        String length = request.getHeader(HttpHeaders.CONTENT_LENGTH);
        boolean chunked = length == null && request.headers().contains(HttpHeaders.TRANSFER_ENCODING);
        if (length == null && !chunked || request.isEnded() || !ROOTS.contains(firstSegment(rc.normalizedPath()))) {
            rc.next();
            return;
        }
        long size;
        try {
            size = chunked ? limit : Long.parseLong(length.trim());
        } catch (NumberFormatException e) {
            rc.next(); // the HTTP layer answers a malformed length
            return;
        }
        if (size > limit) {
            refuse(rc, 413, "the request body (" + size + " bytes) is larger than any the API accepts (" + limit
                    + " bytes: delayq.api.max-batch jobs of delayq.api.max-payload-bytes each, and their fields)", null);
            return;
        }
        if (size == 0) {
            rc.next();
            return;
        }
        long now;
        do {
            now = inFlight.get();
            if (now > 0 && now + size > budget) {
                refuse(rc, 503, "the server is reading as many request bodies as its memory allows"
                        + " (delayq.http.max-body-bytes-in-flight: " + budget + " bytes); retry later", "1");
                return;
            }
        } while (!inFlight.compareAndSet(now, now + size));
        long admitted = size;
        rc.addEndHandler(v -> inFlight.addAndGet(-admitted));
        rc.next();
    }

    /**
     * Answered before the body is read. A 413's connection is closed (its body is more than any
     * request may send). A 503's body is read and dropped as it arrives, holding nothing, so that
     * a client that sends its whole body before reading the answer (as most do) gets the 503 and
     * its Retry-After rather than a connection reset; delayq.http.read-timeout bounds the drain.
     */
    private static void refuse(RoutingContext rc, int status, String detail, String retryAfter) {
        var response = rc.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, Problem.MEDIA_TYPE);
        if (status == 413) {
            response.putHeader(HttpHeaders.CONNECTION, "close");
        } else {
            rc.request().handler(dropped -> {
            });
            rc.request().resume();
        }
        if (retryAfter != null) {
            response.putHeader(HttpHeaders.RETRY_AFTER, retryAfter);
        }
        String title = status == 413 ? "Request Entity Too Large" : "Service Unavailable";
        response.end(new io.vertx.core.json.JsonObject().put("type", "about:blank").put("title", title)
                .put("status", status).put("detail", detail).put("instance", rc.request().path()).encode());
    }

    static String firstSegment(String path) {
        return io.delayq.security.OptionsAccess.firstSegment(path == null ? "" : path);
    }
}
