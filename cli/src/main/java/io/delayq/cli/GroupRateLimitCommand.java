package io.delayq.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code delayq group-rate-limit TOPIC (R | --clear)}: PUT or DELETE /topics/{t}/group-rate-limit. */
@Command(name = "group-rate-limit", mixinStandardHelpOptions = true,
        description = "Set how many jobs of each group of the topic all replicas together take per second (it wins "
                + "over delayq.topics.<t>.group-rate-limit; jobs without a group are not limited by it), or --clear "
                + "it (the configuration's applies again).",
        footer = { "", "Example:", "  delayq group-rate-limit partner-calls 5",
                "  delayq group-rate-limit partner-calls --clear" })
class GroupRateLimitCommand extends ApiCommand {
    @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
    String topic;

    @Parameters(index = "1", arity = "0..1", paramLabel = "R",
            description = "Jobs of one group per second (may have decimals: 0.5 is one every 2 s).")
    String perSecond;

    @Option(names = "--clear", description = "Remove the limit set over the API.")
    boolean clear;

    @Override
    void run(Api api, Output out) {
        if (clear == (perSecond != null)) {
            throw usage("give R or --clear");
        }
        if (clear) {
            out.object(api.delete(topicPath(topic) + "/group-rate-limit").body());
            return;
        }
        double r;
        try {
            r = Double.parseDouble(perSecond);
        } catch (NumberFormatException e) {
            throw usage("R must be a number of jobs per second per group, not '" + perSecond + "'");
        }
        if (!(r > 0) || Double.isInfinite(r)) {
            throw usage("R must be more than 0 (to stop the topic: delayq pause " + topic + ")");
        }
        out.object(api.put(topicPath(topic) + "/group-rate-limit",
                Api.JSON.createObjectNode().put("perSecond", r).toString()).body());
    }
}
