package io.delayq.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code delayq resume TOPIC}: POST /topics/{t}/resume. */
@Command(name = "resume", mixinStandardHelpOptions = true,
        description = "Let replicas take the topic's jobs again; its due jobs start at once.",
        footer = { "", "Example:", "  delayq resume orders" })
class ResumeCommand extends ApiCommand {
    @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
    String topic;

    @Override
    void run(Api api, Output out) {
        out.object(api.post(topicPath(topic) + "/resume", null).body());
    }
}
