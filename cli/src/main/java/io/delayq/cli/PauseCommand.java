package io.delayq.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code delayq pause TOPIC}: POST /topics/{t}/pause. */
@Command(name = "pause", mixinStandardHelpOptions = true,
        description = "Stop every replica taking the topic's jobs (enqueue still works; jobs in flight finish).",
        footer = { "", "Example:", "  delayq pause orders" })
class PauseCommand extends ApiCommand {
    @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
    String topic;

    @Override
    void run(Api api, Output out) {
        out.object(api.post(topicPath(topic) + "/pause", null).body());
    }
}
