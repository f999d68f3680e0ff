package io.delayq.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code delayq rate-limit TOPIC (N | --clear)}: PUT or DELETE /topics/{t}/rate-limit. */
@Command(name = "rate-limit", mixinStandardHelpOptions = true,
        description = "Set how many of the topic's jobs all replicas together take per second (it wins over "
                + "delayq.topics.<t>.rate-limit), or --clear it (the configuration's applies again).",
        footer = { "", "Example:", "  delayq rate-limit orders 50", "  delayq rate-limit orders --clear" })
class RateLimitCommand extends ApiCommand {
    @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
    String topic;

    @Parameters(index = "1", arity = "0..1", paramLabel = "N", description = "Jobs per second (may have decimals: 0.5).")
    String perSecond;

    @Option(names = "--clear", description = "Remove the limit set over the API.")
    boolean clear;

    @Override
    void run(Api api, Output out) {
        if (clear == (perSecond != null)) {
            throw usage("give N or --clear");
        }
        if (clear) {
            out.object(api.delete(topicPath(topic) + "/rate-limit").body());
            return;
        }
        double n;
        try {
            n = Double.parseDouble(perSecond);
        } catch (NumberFormatException e) {
            throw usage("N must be a number of jobs per second, not '" + perSecond + "'");
        }
        if (!(n > 0) || Double.isInfinite(n)) {
            throw usage("N must be more than 0 (to stop the topic: delayq pause " + topic + ")");
        }
        out.object(api.put(topicPath(topic) + "/rate-limit",
                Api.JSON.createObjectNode().put("perSecond", n).toString()).body());
    }
}
