package io.delayq.cli;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

import io.delayq.cli.Output.Column;
import picocli.CommandLine.Command;

/** {@code delayq topics}: GET /topics. */
@Command(name = "topics", mixinStandardHelpOptions = true,
        description = "Every topic: scheduled, in flight and dead jobs, when the next one is due, and its flow "
                + "control (paused, rate limit, max in flight, throttled by its HTTP target).",
        footer = { "", "Example:", "  delayq topics", "  delayq --output json topics | jq -r 'select(.dead > 0) | .topic'" })
class TopicsCommand extends ApiCommand {
    @Override
    void run(Api api, Output out) {
        out.list(api.get("/topics").body(), List.of(Column.of("TOPIC", "topic"), Column.of("SCHEDULED", "scheduled"),
                Column.of("INFLIGHT", "inflight"), Column.of("DEAD", "dead"), Column.time("NEXT DUE", "nextDueAt"),
                new Column("FLOW", TopicsCommand::flow)));
    }

    /** "paused, 50/s (api), 5/s per group (config), 3/5 in flight", or "-" for a topic taken freely. */
    static String flow(JsonNode t) {
        List<String> parts = new ArrayList<>();
        if (t.path("paused").asBoolean(false)) {
            parts.add("paused");
        }
        JsonNode rate = t.path("rateLimit");
        if (rate.hasNonNull("perSecond")) {
            parts.add(number(rate.get("perSecond")) + "/s (" + rate.path("source").asText("?") + ")");
        }
        JsonNode groupRate = t.path("groupRateLimit");
        if (groupRate.hasNonNull("perSecond")) {
            parts.add(number(groupRate.get("perSecond")) + "/s per group (" + groupRate.path("source").asText("?") + ")");
        }
        JsonNode max = t.path("maxInFlight");
        if (max.hasNonNull("max")) {
            parts.add((max.hasNonNull("inflight") ? max.get("inflight").asText() + "/" : "max ") + max.get("max").asText()
                    + " in flight");
        }
        if (t.hasNonNull("throttledUntil")) {
            parts.add("throttled until " + Output.when(t.get("throttledUntil")));
        }
        return parts.isEmpty() ? "-" : String.join(", ", parts);
    }

    static String number(JsonNode n) {
        double d = n.asDouble();
        return d == Math.rint(d) ? Long.toString((long) d) : n.asText();
    }
}
