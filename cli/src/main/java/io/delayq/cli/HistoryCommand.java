package io.delayq.cli;

import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

import io.delayq.cli.Output.Column;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code delayq history TOPIC [--minutes N]}: GET /topics/{t}/history. */
@Command(name = "history", mixinStandardHelpOptions = true,
        description = "A topic's last minutes, one line per minute, oldest first: jobs enqueued, succeeded, failed, "
                + "and the lateness p99, summed over every replica.",
        footer = { "", "Example:", "  delayq history orders --minutes 15" })
class HistoryCommand extends ApiCommand {
    @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
    String topic;

    @Option(names = "--minutes", paramLabel = "N", defaultValue = "60",
            description = "How far back, 1 to 1440 (default ${DEFAULT-VALUE}).")
    int minutes;

    @Override
    void run(Api api, Output out) {
        JsonNode history = api.get(topicPath(topic) + "/history?minutes=" + minutes).body();
        out.list(history, List.of(Column.time("MINUTE", "minute"), Column.of("ENQUEUED", "enqueued"),
                Column.of("SUCCEEDED", "succeeded"), Column.of("FAILED", "failed"),
                new Column("LATENESS P99", row -> row.hasNonNull("latenessP99Ms")
                        ? Durations.text(java.time.Duration.ofMillis(row.get("latenessP99Ms").asLong()))
                        : "-")));
    }
}
