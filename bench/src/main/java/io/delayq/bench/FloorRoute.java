package io.delayq.bench;

import java.time.Instant;
import java.util.List;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.delayq.core.JobInfo;
import io.delayq.core.NewJob;
import io.delayq.store.JobQueue;
import io.delayq.store.Partition;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/**
 * The REST floor of the wrk scenario ({@link WrkScenario}): {@code POST /bench-floor}, a bare
 * Vert.x route on the same HTTP server as delayq's API that does the store's part of a single-job
 * {@code POST /jobs} and nothing else. For the body wrk sends ({@code topic}, {@code id},
 * {@code delayMs}, {@code payload}) it parses the JSON (Vert.x' Jackson codec), builds the
 * {@link NewJob} that delayq's parser builds for it, and calls the store's own enqueue
 * ({@link JobQueue#enqueueAsync}: the same argument building, the same {@code enqueue1} Lua script
 * by SHA, the same topic listing, through the same Redis client, event-loop connection and pool),
 * on the event loop that read the request, as {@code POST /jobs} does; then it answers 201 with a
 * Location and the same small JSON body ({@code id, topic, runAt, state, attempts}).
 * <p>
 * What it leaves out is what the comparison measures: RESTEasy Reactive's dispatch and filters
 * (the JSON content-type check, the access policy), Jackson databind and the field-by-field
 * validation of delayq's parser, the trace context, the metrics of the service layer, the
 * response's serialisation through JAX-RS. Not an API: the bench program only.
 */
@ApplicationScoped
public class FloorRoute {
    static final String PATH = "/bench-floor";
    private final JobQueue queue;

    public FloorRoute(JobQueue queue) {
        this.queue = queue;
    }

    void init(@Observes Router router) {
        router.post(PATH).handler(ctx -> {
            ctx.request().body().onComplete(body -> {
                if (body.failed()) {
                    ctx.fail(body.cause());
                } else {
                    enqueue(ctx, body.result());
                }
            });
            // Quarkus hands the request to the router paused (its body waits for whoever reads it)
            ctx.request().resume();
        });
    }

    private void enqueue(RoutingContext ctx, Buffer body) {
        NewJob job;
        try {
            JsonObject o = new JsonObject(body);
            String topic = o.getString("topic"), id = o.getString("id");
            Long delayMs = o.getLong("delayMs");
            if (topic == null || id == null || delayMs == null) {
                answer(ctx.response().setStatusCode(400), "{\"detail\":\"topic, id and delayMs are required\"}");
                return;
            }
            Object payload = o.getValue("payload");
            job = new NewJob(topic, id, true, delayMs, 0, payload == null ? null : Json.encode(payload));
        } catch (RuntimeException bad) {
            answer(ctx.response().setStatusCode(400), "{\"detail\":\"the body is not a JSON object\"}");
            return;
        }
        Partition p = queue.partitionOf(job.topic(), job.id(), null);
        String location = ctx.request().scheme() + "://" + ctx.request().getHeader("Host") + "/jobs/" + job.topic() + "/"
                + job.id();
        queue.enqueueAsync(p, List.of(job), "").onComplete(done -> {
            if (done.failed()) {
                answer(ctx.response().setStatusCode(503), new JsonObject().put("detail", String.valueOf(done.cause()))
                        .encode());
                return;
            }
            JobInfo info = done.result().get(0);
            JsonObject reply = new JsonObject().put("id", info.id()).put("topic", info.topic())
                    .put("runAt", text(info.runAt())).put("state", info.state().json()).put("attempts", info.attempts());
            HttpServerResponse r = ctx.response().setStatusCode(info.created() ? 201 : 200);
            if (info.created()) {
                r.putHeader("Location", location);
            }
            answer(r, reply.encode());
        });
    }

    private static void answer(HttpServerResponse r, String json) {
        r.putHeader("Content-Type", "application/json").end(json);
    }

    private static String text(Instant t) {
        return t == null ? null : t.toString();
    }
}
