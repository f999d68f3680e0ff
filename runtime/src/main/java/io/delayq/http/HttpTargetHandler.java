package io.delayq.http;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

import io.delayq.core.Job;
import io.delayq.core.PermanentJobFailureException;
import io.delayq.dispatch.AttemptContext;
import io.delayq.dispatch.JobHandler;
import io.delayq.dispatch.JobRunner;

/**
 * The built-in observer of a topic with {@code delayq.topics.<topic>.http.url}: POSTs the job's
 * payload there with {@code X-Delayq-Job-Id}, {@code X-Delayq-Topic} and {@code X-Delayq-Attempt}
 * (and {@code traceparent} when the service traces).
 * A 2xx reply completes the job; an answer with {@code X-Delayq-Snooze} (seconds or an HTTP date)
 * snoozes it until then (the attempt not counted); any other status, a connection error or
 * the timeout fails the attempt (and the retry policy applies), and a non-2xx answer with
 * {@code X-Delayq-Permanent: true} sends the job to the dead set at once. Lets services in any
 * language use delayq.
 */
public final class HttpTargetHandler implements JobHandler {
    // One client for all targets: the JDK client pools connections per host and is native-safe.
    private static volatile HttpClient client;
    private final URI url;
    private final Duration timeout;

    public HttpTargetHandler(String url, Duration timeout) {
        this.url = URI.create(url);
        this.timeout = timeout;
        if (!"http".equals(this.url.getScheme()) && !"https".equals(this.url.getScheme())) {
            throw new IllegalArgumentException("delayq.topics.*.http.url must be an http(s) URL: " + url);
        }
        client(); // built at start-up, not on the first job (it costs a few hundred ms cold)
    }

    private static HttpClient client() {
        HttpClient c = client;
        if (c == null) {
            synchronized (HttpTargetHandler.class) {
                if (client == null) {
                    client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5))
                            .version(HttpClient.Version.HTTP_1_1).build();
                }
                c = client;
            }
        }
        return c;
    }

    @Override
    public CompletionStage<Void> handle(Job job, AttemptContext context) {
        String body = job.payloadJson() == null ? "null" : job.payloadJson();
        HttpRequest.Builder request = HttpRequest.newBuilder(url).timeout(timeout)
                .header("Content-Type", "application/json")
                .header("X-Delayq-Job-Id", job.id())
                .header("X-Delayq-Topic", job.topic())
                .header("X-Delayq-Attempt", Integer.toString(job.attempt()));
        // The target's spans join the job's trace (W3C Trace Context).
        job.traceparent().ifPresent(t -> request.header("traceparent", t));
        return client().sendAsync(request.POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.discarding()).thenApply(response -> {
            // Only a header of delayq's own snoozes: 202 + Retry-After is also what an API answers
            // for "accepted, poll later", which must stay a completed job (2xx = done).
            Optional<String> snoozeFor = response.headers().firstValue("X-Delayq-Snooze");
            if (snoozeFor.isPresent()) {
                snooze(job, snoozeFor.get().trim());
            }
            if (response.statusCode() / 100 != 2
                    && response.headers().firstValue("X-Delayq-Permanent").filter("true"::equalsIgnoreCase).isPresent()) {
                // Only the target's own code sends this header. A status alone (400, 404, 422) is also
                // what a proxy, an ingress or a framework answers for a wrong path or a mid-rollout
                // config: permanent by status would bury every job until that is fixed.
                throw new PermanentJobFailureException("HTTP target " + url + " answered " + response.statusCode()
                        + " with X-Delayq-Permanent: true");
            }
            if (response.statusCode() / 100 != 2) {
                throw new HttpTargetException("HTTP target " + url + " answered " + response.statusCode());
            }
            return null;
        });
    }

    /**
     * "Not done yet, call again then": {@code X-Delayq-Snooze} is delay-seconds or an HTTP date,
     * as {@code Retry-After} (RFC 9110).
     */
    private void snooze(Job job, String when) {
        if (!when.isEmpty() && when.chars().allMatch(Character::isDigit)) {
            job.snooze(Duration.ofSeconds(when.length() > 12 ? Long.MAX_VALUE / 1000 : Long.parseLong(when)));
        }
        try {
            job.snoozeUntil(Instant.from(ZonedDateTime.parse(when, DateTimeFormatter.RFC_1123_DATE_TIME)));
        } catch (DateTimeParseException e) {
            // The target meant to be called again, but not when: a failed attempt shows why.
            throw new HttpTargetException("HTTP target " + url + " answered with an unreadable X-Delayq-Snooze: " + when);
        }
    }

    /**
     * A call that timed out may still be running at the target: the retry waits at least the
     * timeout again, so that it does not overlap a first call that takes up to twice the timeout
     * (a target that answers, late, within the time it was given does not see two calls at once).
     */
    @Override
    public long minRetryDelayMs(Throwable error) {
        for (Throwable e = error; e != null; e = e.getCause()) {
            if (e instanceof HttpConnectTimeoutException) {
                return 0; // never connected: the target did not get the call
            }
            if (e instanceof HttpTimeoutException || e instanceof JobRunner.AttemptTimeoutException) {
                return timeout.toMillis();
            }
        }
        return 0;
    }

    @Override
    public String describe() {
        return "HTTP target " + url;
    }

    /** A non-2xx answer of the target. */
    public static final class HttpTargetException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        HttpTargetException(String message) {
            super(message, null, false, false);
        }
    }
}
