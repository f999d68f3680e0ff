package io.delayq.cli;

/** Ends a command with an exit code and a message for stderr. */
final class CliFailure extends RuntimeException {
    final int exitCode;

    CliFailure(int exitCode, String message) {
        super(message, null, false, false);
        this.exitCode = exitCode;
    }
}
