package io.delayq.cli;

import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * A command that sets a limit in jobs per second over the API ({@code PUT /topics/{t}/<path>}
 * {@code {"perSecond": R}}, decimals allowed, more than 0) or clears it ({@code DELETE}).
 */
abstract class RateCommand extends ApiCommand {
    @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
    String topic;

    @Option(names = "--clear", description = "Remove the limit set over the API.")
    boolean clear;

    /** The resource under /topics/{t}: {@code rate-limit}. */
    abstract String path();

    /** The rate given, null when none. */
    abstract String perSecond();

    /** Its name in the usage and the messages: {@code N}. */
    abstract String label();

    /** What it counts, for the message that refuses a value that is no number: "jobs per second". */
    abstract String unit();

    @Override
    void run(Api api, Output out) {
        String given = perSecond();
        if (clear == (given != null)) {
            throw usage("give " + label() + " or --clear");
        }
        if (clear) {
            out.object(api.delete(topicPath(topic) + "/" + path()).body());
            return;
        }
        double r;
        try {
            r = Double.parseDouble(given);
        } catch (NumberFormatException e) {
            throw usage(label() + " must be a number of " + unit() + ", not '" + given + "'");
        }
        if (!(r > 0) || Double.isInfinite(r)) {
            throw usage(label() + " must be more than 0 (to stop the topic: delayq pause " + topic + ")");
        }
        out.object(api.put(topicPath(topic) + "/" + path(), Api.JSON.createObjectNode().put("perSecond", r).toString())
                .body());
    }
}
