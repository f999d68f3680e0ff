package io.delayq.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code delayq max-in-flight TOPIC (N | --clear)}: PUT or DELETE /topics/{t}/max-in-flight. */
@Command(name = "max-in-flight", mixinStandardHelpOptions = true,
        description = "Set how many of the topic's jobs may run at once over all replicas (it wins over "
                + "delayq.topics.<t>.max-in-flight), or --clear it (the configuration's applies again).",
        footer = { "", "Example:", "  delayq max-in-flight orders 5", "  delayq max-in-flight orders --clear" })
class MaxInFlightCommand extends ApiCommand {
    @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
    String topic;

    @Parameters(index = "1", arity = "0..1", paramLabel = "N", description = "Jobs running at once, 1 or more.")
    String max;

    @Option(names = "--clear", description = "Remove the cap set over the API.")
    boolean clear;

    @Override
    void run(Api api, Output out) {
        if (clear == (max != null)) {
            throw usage("give N or --clear");
        }
        if (clear) {
            out.object(api.delete(topicPath(topic) + "/max-in-flight").body());
            return;
        }
        int n;
        try {
            n = Integer.parseInt(max);
        } catch (NumberFormatException e) {
            throw usage("N must be a whole number of jobs, not '" + max + "'");
        }
        if (n < 1) {
            throw usage("N must be 1 or more (to stop the topic: delayq pause " + topic + ")");
        }
        out.object(api.put(topicPath(topic) + "/max-in-flight", Api.JSON.createObjectNode().put("max", n).toString())
                .body());
    }
}
