package io.delayq.cli;

import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

import io.delayq.cli.Output.Column;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code delayq schedules list|trigger}: recurring schedules over /schedules. */
@Command(name = "schedules", mixinStandardHelpOptions = true, description = "Recurring schedules: list, trigger.",
        subcommands = { SchedulesCommand.ListSchedules.class, SchedulesCommand.Trigger.class },
        footer = { "", "Example:", "  delayq schedules list" })
class SchedulesCommand {

    @Command(name = "list", mixinStandardHelpOptions = true,
            description = "Every recurring schedule: where it comes from (config or api), when it ticks, its topic, "
                    + "its last and next tick.",
            footer = { "", "Example:", "  delayq schedules list" })
    static class ListSchedules extends ApiCommand {
        @Override
        void run(Api api, Output out) {
            out.list(api.get("/schedules").body(), List.of(Column.of("NAME", "name"), Column.of("SOURCE", "source"),
                    new Column("WHEN", ListSchedules::when), Column.of("TOPIC", "topic"),
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

    @Command(name = "trigger", mixinStandardHelpOptions = true,
            description = "Run a schedule once now: one job of its topic, id <name>:trigger:<now ms>; its ticks go on "
                    + "as before.",
            footer = { "", "Example:", "  delayq schedules trigger nightly-report" })
    static class Trigger extends ApiCommand {
        @Parameters(index = "0", paramLabel = "NAME", description = "The schedule.")
        String name;

        @Override
        void run(Api api, Output out) {
            JsonNode job = api.post("/schedules/" + Api.enc(name) + "/trigger", null).body();
            if (out.json) {
                out.object(job);
            } else {
                out.said("triggered " + name + ": " + job.path("topic").asText() + "/" + job.path("id").asText(), job);
            }
        }
    }
}
