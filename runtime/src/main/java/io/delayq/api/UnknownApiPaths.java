package io.delayq.api;

import java.util.regex.Pattern;

import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import org.eclipse.microprofile.config.inject.ConfigProperty;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.quarkus.arc.properties.IfBuildProperty;
import io.vertx.ext.web.Router;

/**
 * A path under the API's roots ({@code /jobs}, {@code /topics}, {@code /schedules}, {@code /history})
 * that no resource method has answers 404 with a problem body, as every other error of the API does:
 * without this route the REST layer hands it on and the request ends on Quarkus' HTML "Resource not
 * found" page, which no generated client can read. Registered last, so it sees only what nothing
 * else answered; a service's own paths outside these roots keep their own 404.
 */
@Singleton
@IfBuildProperty(name = "delayq.api.enabled", stringValue = "true", enableIfMissing = true)
public class UnknownApiPaths {

    void route(@Observes Router router, ObjectMapper mapper,
            @ConfigProperty(name = "quarkus.rest.path", defaultValue = "/") String restPath) {
        // The router is the application's (under quarkus.http.root-path); the REST path is ours to add.
        String root = ("/" + restPath).replaceAll("/{2,}", "/").replaceAll("/+$", "");
        router.routeWithRegex(Pattern.quote(root) + "/(jobs|topics|schedules|history)(/.*)?").order(Integer.MAX_VALUE - 1)
                .handler(rc -> {
                    String path = rc.request().path();
                    String body;
                    try {
                        body = mapper.writeValueAsString(new Problem("about:blank", "Not Found", 404,
                                "no operation of the API at " + rc.request().method().name() + " " + path
                                        + " (see /q/openapi)", path, null, null, null, null));
                    } catch (JsonProcessingException e) {
                        throw new IllegalStateException(e);
                    }
                    rc.response().setStatusCode(404).putHeader("Content-Type", Problem.MEDIA_TYPE).end(body);
                });
    }
}
