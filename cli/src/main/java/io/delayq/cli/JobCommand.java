package io.delayq.cli;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.delayq.cli.Output.Column;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code delayq job list|get|enqueue|cancel|reschedule}: a topic's jobs, one job over /jobs. */
@Command(name = "job", mixinStandardHelpOptions = true,
        description = "Jobs: list a topic's, get, enqueue, cancel (one or by filter), reschedule.",
        subcommands = { JobCommand.ListJobs.class, JobCommand.Get.class, JobCommand.Enqueue.class, JobCommand.Cancel.class,
                JobCommand.Reschedule.class },
        footer = { "", "Example:", "  delayq job get orders order-42" })
class JobCommand {

    @Command(name = "list", mixinStandardHelpOptions = true,
            description = "A topic's jobs in one state: scheduled by runAt (those their group holds back first), "
                    + "inflight by id, dead and succeeded (with result-retention) newest first. One page, or every page with --all.",
            footer = { "", "Example:", "  delayq job list reminders --id-prefix tenant7- --all",
                    "  delayq job list orders --state dead --limit 20" })
    static class ListJobs extends ApiCommand {
        @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
        String topic;

        @Option(names = "--state", paramLabel = "S", defaultValue = "scheduled",
                description = "scheduled (default), inflight, dead or succeeded.")
        String state;

        @Option(names = "--id-prefix", paramLabel = "P", description = "Only ids that start with P.")
        String idPrefix;

        @Option(names = "--group", paramLabel = "G", description = "Only jobs of group G.")
        String group;

        @Option(names = "--from", paramLabel = "INSTANT", description = "Only jobs due at or after this ISO-8601 instant.")
        String from;

        @Option(names = "--to", paramLabel = "INSTANT", description = "Only jobs due at or before this ISO-8601 instant.")
        String to;

        @Option(names = "--limit", paramLabel = "N", defaultValue = "100",
                description = "Jobs per page, 1 to 1000 (default ${DEFAULT-VALUE}); succeeded jobs, with their results, at most 100.")
        int limit;

        @Option(names = "--all", description = "Every page, following the cursor to its end.")
        boolean all;

        @Override
        void run(Api api, Output out) {
            // Succeeded jobs with their results: fields=full, whose pages hold at most 100 jobs.
            boolean results = "succeeded".equals(state);
            StringBuilder q = new StringBuilder("?state=").append(Api.enc(state)).append("&limit=")
                    .append(results ? Math.min(limit, 100) : limit).append(results ? "&fields=full" : "");
            if (idPrefix != null) {
                q.append("&idPrefix=").append(Api.enc(idPrefix));
            }
            if (group != null) {
                q.append("&group=").append(Api.enc(group));
            }
            if (from != null) {
                q.append("&from=").append(Api.enc(Durations.instant(spec.commandLine(), "--from", from).toString()));
            }
            if (to != null) {
                q.append("&to=").append(Api.enc(Durations.instant(spec.commandLine(), "--to", to).toString()));
            }
            ArrayNode jobs = Api.JSON.createArrayNode();
            String cursor = null;
            do {
                JsonNode page = api.get(topicPath(topic) + "/jobs" + q + (cursor == null ? "" : "&cursor=" + Api.enc(cursor)))
                        .body();
                jobs.addAll((ArrayNode) page.path("jobs"));
                cursor = page.path("cursor").isTextual() ? page.path("cursor").asText() : null;
            } while (all && cursor != null);
            if ("succeeded".equals(state)) {
                // The kept successes (result-retention): when each ended, and what it produced.
                out.list(jobs, List.of(Column.of("ID", "id"), Column.time("SUCCEEDED", "finishedAt"),
                        Column.of("ATTEMPTS", "attempts"), Column.of("PRIORITY", "priority"),
                        new Column("RESULT", ListJobs::result)));
            } else {
                out.list(jobs, List.of(Column.of("ID", "id"), Column.of("STATE", "state"), Column.time("RUN AT", "runAt"),
                        Column.of("ATTEMPTS", "attempts"), Column.of("PRIORITY", "priority"),
                        new Column("GROUP", row -> Output.plain(row.get("group"))
                                + (row.path("held").asBoolean(false) ? " (held)" : "")),
                        new Column("LAST ERROR", row -> Output.cut(Output.plain(row.get("lastError")), 60))));
            }
            if (cursor != null) {
                // Off stdout: the list itself stays what was asked for.
                spec.commandLine().getErr().println("delayq: more jobs follow; --all lists every page");
            }
        }

        /** A kept result as one line: its JSON (cut), or why there is none. */
        static String result(JsonNode row) {
            if (row.path("resultDropped").asBoolean(false)) {
                return "(dropped: too large)";
            }
            JsonNode r = row.get("result");
            return r == null ? "-" : Output.cut(r.isTextual() ? r.asText() : r.toString(), 60)
                    + (row.path("resultCut").asBoolean(false) ? " (cut)" : "");
        }
    }

    @Command(name = "get", mixinStandardHelpOptions = true,
            description = "A job's state (scheduled, inflight, dead, or succeeded: kept by the topic's result-retention, "
                    + "with finishedAt and its result, or within its dedup window), attempts, runAt and last error.",
            footer = { "", "Example:", "  delayq job get orders order-42" })
    static class Get extends ApiCommand {
        @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
        String topic;

        @Parameters(index = "1", paramLabel = "ID", description = "The job's id.")
        String id;

        @Override
        void run(Api api, Output out) {
            out.object(api.get(jobPath(topic, id)).body());
        }
    }

    @Command(name = "enqueue", mixinStandardHelpOptions = true,
            description = "Enqueue one job, due now, after --delay or --at an instant. Enqueue is idempotent by id: "
                    + "an id that exists is kept as it is unless --if-exists says replace or extend.",
            footer = { "", "Example:",
                    "  delayq job enqueue orders --id order-42 --payload '{\"orderId\": 42}' --delay 30m",
                    "  delayq job enqueue orders --id order-1 --priority 1" })
    static class Enqueue extends ApiCommand {
        @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
        String topic;

        @Option(names = "--id", paramLabel = "ID", description = "The job's id (generated when absent).")
        String id;

        @Option(names = "--payload", paramLabel = "JSON",
                description = "Any JSON value, stored as given; @FILE reads it from a file.")
        String payload;

        @Option(names = "--delay", paramLabel = "DURATION", description = "Due after this long: 30s, 5m, 1h, 2d.")
        String delay;

        @Option(names = "--at", paramLabel = "INSTANT", description = "Due at this ISO-8601 instant: 2026-12-24T18:00:00Z.")
        String at;

        @Option(names = "--group", paramLabel = "G", description = "The job's group (its topic's group-max-in-flight).")
        String group;

        @Option(names = "--timeout-ms", paramLabel = "MS",
                description = "The job's own attempt timeout in ms (1 .. 86400000), in place of its topic's (and its "
                        + "HTTP target's http.timeout).")
        Long timeoutMs;

        @Option(names = "--expires-at", paramLabel = "INSTANT",
                description = "ISO-8601 instant after its runAt: a job not started by then is never started (it goes "
                        + "to the dead set as expired).")
        String expiresAt;

        @Option(names = "--priority", paramLabel = "N",
                description = "1 (first) to 5 (last), default 3: of the jobs due in a partition a higher priority is "
                        + "taken first, never before its runAt. With --if-exists replace or extend, absent keeps the "
                        + "stored one.")
        Integer priority;

        @Option(names = "--if-exists", paramLabel = "keep|replace|extend",
                description = "What an id that exists does: keep it (default), replace its payload and runAt, or "
                        + "extend (replace, but runAt only ever moves later).")
        String ifExists;

        @Override
        void run(Api api, Output out) {
            if (delay != null && at != null) {
                throw usage("give --delay or --at, not both");
            }
            if (ifExists != null && !(ifExists.equals("keep") || ifExists.equals("replace") || ifExists.equals("extend"))) {
                throw usage("--if-exists must be keep, replace or extend, not '" + ifExists + "'");
            }
            if (priority != null && (priority < 1 || priority > 5)) {
                throw usage("--priority must be 1 (first) to 5 (last), not " + priority);
            }
            String raw = payload == null ? null : payload("--payload", payload);
            String body = body(raw);
            Api.Reply r = api.post("/jobs", body);
            JsonNode job = r.body();
            String what = r.status() == 201 ? "created"
                    : job.path("replaced").asBoolean(false) ? "replaced" : "exists (kept as it is)";
            if (out.json) {
                out.object(job);
            } else {
                out.said(what + ": " + job.path("topic").asText() + "/" + job.path("id").asText(), job);
                out.object(job);
            }
        }

        /** The enqueue body, the payload written byte for byte as given (the server stores it so). */
        private String body(String rawPayload) {
            StringWriter w = new StringWriter();
            try (JsonGenerator g = Api.JSON.getFactory().createGenerator(w)) {
                g.writeStartObject();
                g.writeStringField("topic", topic);
                if (id != null) {
                    g.writeStringField("id", id);
                }
                if (rawPayload != null) {
                    g.writeFieldName("payload");
                    g.writeRawValue(rawPayload);
                }
                if (delay != null) {
                    g.writeNumberField("delayMs", Durations.parse(spec.commandLine(), "--delay", delay).toMillis());
                }
                if (at != null) {
                    g.writeStringField("runAt", Durations.instant(spec.commandLine(), "--at", at).toString());
                }
                if (group != null) {
                    g.writeStringField("group", group);
                }
                if (ifExists != null) {
                    g.writeStringField("ifExists", ifExists);
                }
                if (timeoutMs != null) {
                    g.writeNumberField("timeoutMs", timeoutMs);
                }
                if (priority != null) {
                    g.writeNumberField("priority", priority);
                }
                if (expiresAt != null) {
                    g.writeStringField("expiresAt", Durations.instant(spec.commandLine(), "--expires-at", expiresAt).toString());
                }
                g.writeEndObject();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return w.toString();
        }
    }

    @Command(name = "cancel", mixinStandardHelpOptions = true,
            description = "Cancel a job by id (one in flight is stopped: \"cancelling\"; a dead one: exit 1, "
                    + "conflict), or every scheduled job whose id starts with P and/or of group G.",
            footer = { "", "Example:", "  delayq job cancel orders order-42",
                    "  delayq job cancel reminders --id-prefix tenant7-" })
    static class Cancel extends ApiCommand {
        @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
        String topic;

        @Parameters(index = "1", arity = "0..1", paramLabel = "ID", description = "The job's id.")
        String id;

        @Option(names = "--id-prefix", paramLabel = "P", description = "Every scheduled job whose id starts with P.")
        String idPrefix;

        @Option(names = "--group", paramLabel = "G", description = "Every scheduled job of group G (with --id-prefix: both).")
        String group;

        @Override
        void run(Api api, Output out) {
            boolean filtered = idPrefix != null || group != null;
            if ((id != null) == filtered) {
                throw usage("give one of ID, or --id-prefix P and/or --group G");
            }
            if (id == null) {
                ObjectNode filter = Api.JSON.createObjectNode();
                if (idPrefix != null) {
                    filter.put("idPrefix", idPrefix);
                }
                if (group != null) {
                    filter.put("group", group);
                }
                JsonNode r = api.post(topicPath(topic) + "/jobs/cancel", filter.toString()).body();
                out.said("cancelled " + r.path("cancelled").asLong() + " scheduled jobs of " + topic, r);
                return;
            }
            Api.Reply r = api.delete(jobPath(topic, id));
            if (r.status() == 202) {
                // In flight: the replica running it stops it; it will not run again.
                out.said("cancelling: " + topic + "/" + id + " (in flight: its attempt is being stopped; it will not "
                        + "run again)", r.body());
                return;
            }
            ObjectNode done = Api.JSON.createObjectNode().put("topic", topic).put("id", id).put("cancelled", true);
            out.said("cancelled: " + topic + "/" + id, done);
        }
    }

    @Command(name = "reschedule", mixinStandardHelpOptions = true,
            description = "Move a scheduled job to a new time: --delay from now (0 runs it now) or --at an instant.",
            footer = { "", "Example:", "  delayq job reschedule orders order-42 --delay 2h" })
    static class Reschedule extends ApiCommand {
        @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
        String topic;

        @Parameters(index = "1", paramLabel = "ID", description = "The job's id.")
        String id;

        @Option(names = "--delay", paramLabel = "DURATION", description = "Due after this long from now: 30s, 5m, 1h, 2d.")
        String delay;

        @Option(names = "--at", paramLabel = "INSTANT", description = "Due at this ISO-8601 instant.")
        String at;

        @Override
        void run(Api api, Output out) {
            if ((delay == null) == (at == null)) {
                throw usage("give --delay or --at");
            }
            ObjectNode body = Api.JSON.createObjectNode();
            if (delay != null) {
                Duration d = Durations.parse(spec.commandLine(), "--delay", delay);
                body.put("delayMs", d.toMillis());
            } else {
                Instant t = Durations.instant(spec.commandLine(), "--at", at);
                body.put("runAt", t.toString());
            }
            out.object(api.patch(jobPath(topic, id), body.toString()).body());
        }
    }
}
