package io.delayq.api;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.quarkus.runtime.annotations.RegisterForReflection;
import jakarta.ws.rs.core.Response;

/**
 * An RFC 9457 problem body. {@code field} names the request field that broke a rule (a JSON
 * path such as {@code jobs[3].delayMs}), when one did.
 */
@RegisterForReflection
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Problem(String type, String title, int status, String detail, String instance, String field) {
    public static final String MEDIA_TYPE = "application/problem+json";

    public static Response.ResponseBuilder response(int status, String detail, String field, String instance) {
        Response.StatusType st = Response.Status.fromStatusCode(status);
        String title = st != null ? st.getReasonPhrase() : "HTTP " + status;
        return Response.status(status).type(MEDIA_TYPE)
                .entity(new Problem("about:blank", title, status, detail, instance, field));
    }
}
