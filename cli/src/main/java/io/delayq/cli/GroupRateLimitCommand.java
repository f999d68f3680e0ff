package io.delayq.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code delayq group-rate-limit TOPIC (R | --clear)}: PUT or DELETE /topics/{t}/group-rate-limit. */
@Command(name = "group-rate-limit", mixinStandardHelpOptions = true,
        description = "Set how many jobs of each group of the topic all replicas together take per second (it wins "
                + "over delayq.topics.<t>.group-rate-limit; jobs without a group are not limited by it), or --clear "
                + "it (the configuration's applies again).",
        footer = { "", "Example:", "  delayq group-rate-limit partner-calls 5",
                "  delayq group-rate-limit partner-calls --clear" })
class GroupRateLimitCommand extends RateCommand {
    @Parameters(index = "1", arity = "0..1", paramLabel = "R",
            description = "Jobs of one group per second (may have decimals: 0.5 is one every 2 s).")
    String perSecond;

    @Override
    String path() {
        return "group-rate-limit";
    }

    @Override
    String perSecond() {
        return perSecond;
    }

    @Override
    String label() {
        return "R";
    }

    @Override
    String unit() {
        return "jobs per second per group";
    }
}
