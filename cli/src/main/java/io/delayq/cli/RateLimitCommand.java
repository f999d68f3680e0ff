package io.delayq.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code delayq rate-limit TOPIC (N | --clear)}: PUT or DELETE /topics/{t}/rate-limit. */
@Command(name = "rate-limit", mixinStandardHelpOptions = true,
        description = "Set how many of the topic's jobs all replicas together take per second (it wins over "
                + "delayq.topics.<t>.rate-limit), or --clear it (the configuration's applies again).",
        footer = { "", "Example:", "  delayq rate-limit orders 50", "  delayq rate-limit orders --clear" })
class RateLimitCommand extends RateCommand {
    @Parameters(index = "1", arity = "0..1", paramLabel = "N", description = "Jobs per second (may have decimals: 0.5).")
    String perSecond;

    @Override
    String path() {
        return "rate-limit";
    }

    @Override
    String perSecond() {
        return perSecond;
    }

    @Override
    String label() {
        return "N";
    }

    @Override
    String unit() {
        return "jobs per second";
    }
}
