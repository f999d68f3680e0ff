package io.delayq.cli;

import java.time.Duration;

import io.quarkus.picocli.runtime.annotations.TopCommand;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code delayq} command: its global options (given before the command) and its commands.
 * Every command talks to a delayq server's REST API and nothing else; the exit code says how it
 * went ({@link Exit}).
 */
@TopCommand
@Command(name = "delayq", mixinStandardHelpOptions = true, versionProvider = Version.class,
        description = "Operate a delayq server over its REST API: topics, jobs, dead letters, flow control, "
                + "schedules and history.",
        subcommands = { TopicsCommand.class, JobCommand.class, DeadCommand.class, PauseCommand.class,
                ResumeCommand.class, RateLimitCommand.class, GroupRateLimitCommand.class, MaxInFlightCommand.class,
                SchedulesCommand.class, HistoryCommand.class, CompletionCommand.class },
        footer = { "", "Exit codes: 0 done, 1 not found or conflict, 2 usage (or input the server",
                "refused), 3 not allowed (401/403), 4 unavailable (5xx, connection refused, timeout).", "",
                "Example:", "  delayq --url http://delayq:8080 --user alice:s3cret topics" })
public class Delayq {
    @Option(names = "--url", paramLabel = "URL", defaultValue = "${env:DELAYQ_URL:-http://localhost:8080}",
            description = "Base URL of the server (env DELAYQ_URL; default ${DEFAULT-VALUE}).")
    String url;

    @Option(names = "--token", paramLabel = "TOKEN", defaultValue = "${env:DELAYQ_TOKEN}",
            description = "Bearer token: delayq.api.token or an OIDC access token (env DELAYQ_TOKEN).")
    String token;

    @Option(names = "--user", paramLabel = "NAME:PASSWORD", defaultValue = "${env:DELAYQ_USER}",
            description = "User and password for HTTP Basic (env DELAYQ_USER).")
    String user;

    @Option(names = "--output", paramLabel = "table|json", defaultValue = "table",
            description = "table (aligned columns, times in UTC and relative) or json (one object per line). "
                    + "Default: ${DEFAULT-VALUE}.")
    String output;

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "30s",
            description = "Give up on a server that does not connect or answer within it (30s, 5m; default "
                    + "${DEFAULT-VALUE}).")
    String timeout;

    /** The client for these options; a bad option is a usage error of the command that asked. */
    Api api(picocli.CommandLine cmd) {
        if (token != null && !token.isEmpty() && user != null && !user.isEmpty()) {
            throw new picocli.CommandLine.ParameterException(cmd, "give --token or --user, not both");
        }
        if (user != null && !user.isEmpty() && user.indexOf(':') < 1) {
            throw new picocli.CommandLine.ParameterException(cmd, "--user must be NAME:PASSWORD");
        }
        Duration t = Durations.parse(cmd, "--timeout", timeout);
        if (t.isZero()) {
            throw new picocli.CommandLine.ParameterException(cmd, "--timeout must be more than 0");
        }
        return new Api(url, token, user, t);
    }

    Output out(picocli.CommandLine cmd) {
        return switch (output) {
            case "table" -> new Output(cmd.getOut(), false);
            case "json" -> new Output(cmd.getOut(), true);
            default -> throw new picocli.CommandLine.ParameterException(cmd,
                    "--output must be table or json, not " + output);
        };
    }
}
