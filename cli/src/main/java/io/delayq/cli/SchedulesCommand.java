package io.delayq.cli;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.List;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;

import io.delayq.cli.Output.Column;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code delayq schedules list|put|delete|trigger|pause|resume|backfill}: recurring schedules over /schedules. */
@Command(name = "schedules", mixinStandardHelpOptions = true,
        description = "Recurring schedules: list, put, delete, trigger, pause, resume, backfill.",
        subcommands = { SchedulesCommand.ListSchedules.class, SchedulesCommand.Put.class, SchedulesCommand.Delete.class,
                SchedulesCommand.Trigger.class, SchedulesCommand.Pause.class, SchedulesCommand.Resume.class,
                SchedulesCommand.Backfill.class },
        footer = { "", "Example:", "  delayq schedules list" })
class SchedulesCommand {

    static String path(String name) {
        return "/schedules/" + Api.enc(name);
    }

    @Command(name = "list", mixinStandardHelpOptions = true,
            description = "Every recurring schedule: where it comes from (config or api), when it ticks, its topic, "
                    + "whether it is paused, its last and next tick.",
            footer = { "", "Example:", "  delayq schedules list" })
    static class ListSchedules extends ApiCommand {
        @Override
        void run(Api api, Output out) {
            out.list(api.get("/schedules").body(), List.of(Column.of("NAME", "name"), Column.of("SOURCE", "source"),
                    new Column("WHEN", ListSchedules::when), Column.of("TOPIC", "topic"),
                    new Column("STATE", s -> s.path("paused").asBoolean(false) ? "paused" : "running"),
                    Column.time("LAST TICK", "lastTick"), Column.time("NEXT TICK", "nextTick")));
        }

        static String when(JsonNode s) {
            if (s.hasNonNull("every")) {
                return "every " + s.get("every").asText();
            }
            String zone = s.hasNonNull("timeZone") ? " " + s.get("timeZone").asText() : "";
            return "cron " + Output.plain(s.get("cron")) + zone;
        }
    }

    @Command(name = "put", mixinStandardHelpOptions = true,
            description = "Create or replace a schedule made over the API (kept in Redis, fired by every replica): "
                    + "exactly one of --cron and --every. A replaced schedule stays paused if it was.",
            footer = { "", "Example:",
                    "  delayq schedules put cart-sweep --every 5m --topic cart-sweep --misfire skip --overlap skip",
                    "  delayq schedules put digest --cron '0 0 8 * * ?' --time-zone Europe/Berlin --topic digest \\",
                    "      --payload '{\"kind\":\"daily\"}' --end 2027-12-31T23:59:59Z" })
    static class Put extends ApiCommand {
        @Parameters(index = "0", paramLabel = "NAME", description = "The schedule: [A-Za-z0-9._-]{1,100}.")
        String name;

        @Option(names = "--cron", paramLabel = "EXPR", description = "A Quartz cron expression, with seconds: '0 0/15 * * * ?'.")
        String cron;

        @Option(names = "--every", paramLabel = "DURATION", description = "A period counted from the epoch: 30s, 15m, 1h.")
        String every;

        @Option(names = "--topic", required = true, paramLabel = "TOPIC", description = "The topic each tick's job goes to.")
        String topic;

        @Option(names = "--payload", paramLabel = "JSON",
                description = "Any JSON value, the payload of each tick's job; @FILE reads it from a file.")
        String payload;

        @Option(names = "--time-zone", paramLabel = "ZONE", description = "For --cron: the zone it is read in (default UTC).")
        String timeZone;

        @Option(names = "--misfire", paramLabel = "fire-once|skip",
                description = "What ticks missed while no replica could fire them (or while paused) do: fire the latest "
                        + "once (default) or none.")
        String misfire;

        @Option(names = "--overlap", paramLabel = "allow|skip",
                description = "skip: no tick while the previous tick's job is scheduled or running (default allow).")
        String overlap;

        @Option(names = "--start", paramLabel = "INSTANT", description = "No tick before this ISO-8601 instant.")
        String start;

        @Option(names = "--end", paramLabel = "INSTANT", description = "No tick after this ISO-8601 instant (after --start).")
        String end;

        @Override
        void run(Api api, Output out) {
            if ((cron == null) == (every == null)) {
                throw usage("give --cron or --every" + (cron == null ? "" : ", not both"));
            }
            Api.Reply r = api.put(path(name), body(payload == null ? null : payload("--payload", payload)));
            String what = r.status() == 201 ? "created " : "replaced ";
            if (out.json) {
                out.object(r.body());
            } else {
                out.said(what + name, r.body());
                out.object(r.body());
            }
        }

        /** The schedule's body, the payload written byte for byte as given (the server keeps it so). */
        private String body(String rawPayload) {
            StringWriter w = new StringWriter();
            try (JsonGenerator g = Api.JSON.getFactory().createGenerator(w)) {
                g.writeStartObject();
                field(g, "cron", cron);
                field(g, "every", every);
                g.writeStringField("topic", topic);
                if (rawPayload != null) {
                    g.writeFieldName("payload");
                    g.writeRawValue(rawPayload);
                }
                field(g, "timeZone", timeZone);
                field(g, "misfire", misfire);
                field(g, "overlap", overlap);
                if (start != null) {
                    g.writeStringField("start", Durations.instant(spec.commandLine(), "--start", start).toString());
                }
                if (end != null) {
                    g.writeStringField("end", Durations.instant(spec.commandLine(), "--end", end).toString());
                }
                g.writeEndObject();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return w.toString();
        }

        private static void field(JsonGenerator g, String name, String value) throws IOException {
            if (value != null) {
                g.writeStringField(name, value);
            }
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true,
            description = "Delete a schedule made over the API: no replica fires it again (a tick enqueued ahead is "
                    + "cancelled; jobs of past ticks stay).",
            footer = { "", "Example:", "  delayq schedules delete cart-sweep" })
    static class Delete extends ApiCommand {
        @Parameters(index = "0", paramLabel = "NAME", description = "The schedule.")
        String name;

        @Override
        void run(Api api, Output out) {
            api.delete(path(name));
            out.said("deleted " + name, Api.JSON.createObjectNode().put("name", name).put("deleted", true));
        }
    }

    @Command(name = "trigger", mixinStandardHelpOptions = true,
            description = "Run a schedule once now: one job of its topic, id <name>:trigger:<now ms>; its ticks go on "
                    + "as before.",
            footer = { "", "Example:", "  delayq schedules trigger nightly-report" })
    static class Trigger extends ApiCommand {
        @Parameters(index = "0", paramLabel = "NAME", description = "The schedule.")
        String name;

        @Override
        void run(Api api, Output out) {
            JsonNode job = api.post(path(name) + "/trigger", null).body();
            if (out.json) {
                out.object(job);
            } else {
                out.said("triggered " + name + ": " + job.path("topic").asText() + "/" + job.path("id").asText(), job);
            }
        }
    }

    @Command(name = "pause", mixinStandardHelpOptions = true,
            description = "Pause a schedule made over the API: no replica fires it until it is resumed (the state is "
                    + "kept in Redis; a tick enqueued ahead is cancelled).",
            footer = { "", "Example:", "  delayq schedules pause cart-sweep" })
    static class Pause extends ApiCommand {
        @Parameters(index = "0", paramLabel = "NAME", description = "The schedule.")
        String name;

        @Override
        void run(Api api, Output out) {
            out.said("paused " + name, api.post(path(name) + "/pause", null).body());
        }
    }

    @Command(name = "resume", mixinStandardHelpOptions = true,
            description = "Resume a paused schedule: its ticks go on, and those it missed while paused follow its "
                    + "misfire rule (fire-once: the latest once, now; skip: none).",
            footer = { "", "Example:", "  delayq schedules resume cart-sweep" })
    static class Resume extends ApiCommand {
        @Parameters(index = "0", paramLabel = "NAME", description = "The schedule.")
        String name;

        @Override
        void run(Api api, Output out) {
            out.said("resumed " + name, api.post(path(name) + "/resume", null).body());
        }
    }

    @Command(name = "backfill", mixinStandardHelpOptions = true,
            description = "Enqueue now one job per tick from --from to --to (both included, at most 1000 ticks), each "
                    + "with its tick's id <name>:<tick ms>; a tick whose job exists, or ran within the topic's dedup "
                    + "window, is skipped, so running it again enqueues nothing new.",
            footer = { "", "Example:",
                    "  delayq schedules backfill cart-sweep --from 2026-12-01T08:00:00Z --to 2026-12-01T12:00:00Z" })
    static class Backfill extends ApiCommand {
        @Parameters(index = "0", paramLabel = "NAME", description = "The schedule.")
        String name;

        @Option(names = "--from", required = true, paramLabel = "INSTANT", description = "The first instant (ISO-8601).")
        String from;

        @Option(names = "--to", required = true, paramLabel = "INSTANT", description = "The last instant (ISO-8601).")
        String to;

        @Override
        void run(Api api, Output out) {
            String body = Api.JSON.createObjectNode()
                    .put("from", Durations.instant(spec.commandLine(), "--from", from).toString())
                    .put("to", Durations.instant(spec.commandLine(), "--to", to).toString()).toString();
            JsonNode r = api.post(path(name) + "/backfill", body).body();
            out.said("backfilled " + name + ": " + r.path("enqueued").asInt() + " enqueued, " + r.path("skipped").asInt()
                    + " skipped", r);
        }
    }
}
