package io.delayq.api;

import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.quarkus.runtime.annotations.RegisterForReflection;
import jakarta.ws.rs.core.Response;

/**
 * An RFC 9457 problem body. {@code field} names the request field that broke a rule (a JSON
 * path such as {@code jobs[3].delayMs}), when one did. A 503 of an enqueue also names its jobs
 * (extension members): {@code jobs}, each with its outcome, in request order, and for a single
 * job its {@code id} (a generated one too), so that a retry reuses them. A 409 of an enqueue
 * with {@code ifExists} replace or extend names the job ({@code id}) and its {@code state},
 * {@code inflight}: a running job is never changed.
 */
@RegisterForReflection
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Problem(String type, String title, int status, String detail, String instance, String field, String id,
        List<JobOutcome> jobs, String state) {
    public static final String MEDIA_TYPE = "application/problem+json";

    /**
     * One job of an enqueue that failed as "Redis unavailable": {@code outcome} is {@code stored}
     * (it is in Redis), {@code not stored} or {@code unknown} (its write may have happened).
     */
    @RegisterForReflection
    public record JobOutcome(String id, String topic, String outcome) {
    }

    public static Response.ResponseBuilder response(int status, String detail, String field, String instance) {
        return response(status, detail, field, instance, null, null);
    }

    static Response.ResponseBuilder response(int status, String detail, String field, String instance, String id,
            List<JobOutcome> jobs) {
        return response(status, detail, field, instance, id, jobs, null);
    }

    static Response.ResponseBuilder response(int status, String detail, String field, String instance, String id,
            List<JobOutcome> jobs, String state) {
        Response.StatusType st = Response.Status.fromStatusCode(status);
        String title = st != null ? st.getReasonPhrase() : "HTTP " + status;
        return Response.status(status).type(MEDIA_TYPE)
                .entity(new Problem("about:blank", title, status, detail, instance, field, id, jobs, state));
    }
}
