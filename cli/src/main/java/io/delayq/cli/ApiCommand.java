package io.delayq.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * A command that calls the API: the global options of {@link Delayq}, and the one place that
 * turns a {@link CliFailure} into its message on stderr and its exit code.
 */
abstract class ApiCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    /** Does the work with the server's client and stdout; a failure throws {@link CliFailure}. */
    abstract void run(Api api, Output out);

    @Override
    public final Integer call() {
        Delayq root = (Delayq) spec.root().userObject();
        CommandLine cmd = spec.commandLine();
        Output out = root.out(cmd);
        Api api = root.api(cmd);
        try {
            run(api, out);
            return Exit.DONE;
        } catch (CliFailure f) {
            cmd.getOut().flush();
            cmd.getErr().println("delayq: " + f.getMessage());
            cmd.getErr().flush();
            return f.exitCode;
        }
    }

    CommandLine.ParameterException usage(String message) {
        return new CommandLine.ParameterException(spec.commandLine(), message);
    }

    /** A payload option's JSON, as given ({@code @FILE} reads it from a file), checked to be JSON. */
    String payload(String option, String given) {
        String text = given;
        if (text.startsWith("@")) {
            try {
                text = Files.readString(Path.of(text.substring(1)));
            } catch (IOException e) {
                throw usage(option + " " + given + ": cannot read " + text.substring(1) + ": " + e.getMessage());
            }
        }
        try {
            Api.JSON.readTree(text);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw usage(option + " must be JSON (a string is \"quoted\"): " + e.getOriginalMessage());
        }
        return text.strip();
    }

    static String topicPath(String topic) {
        return "/topics/" + Api.enc(topic);
    }

    static String jobPath(String topic, String id) {
        return "/jobs/" + Api.enc(topic) + "/" + Api.enc(id);
    }
}
