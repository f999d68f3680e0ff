package io.delayq.cli;

/** The exit codes of every command (DESIGN "Operator tools"); scripts rely on them. */
final class Exit {
    static final int DONE = 0;
    /** 404 or 409: no such job, topic or schedule; the job is in flight; a conflict. */
    static final int NOT_FOUND_OR_CONFLICT = 1;
    /** Bad command line (picocli's own code for it), or input the server refused with a 400, 413 or 415. */
    static final int USAGE = 2;
    /** 401 or 403. */
    static final int NOT_ALLOWED = 3;
    /** A 5xx, or no answer: connection refused, a timeout, an unknown host. */
    static final int UNAVAILABLE = 4;

    private Exit() {
    }

    /** The exit code of an HTTP status that is not a success. */
    static int of(int status) {
        if (status == 401 || status == 403) {
            return NOT_ALLOWED;
        }
        if (status == 400 || status == 413 || status == 415 || status == 422) {
            return USAGE;
        }
        if (status >= 500) {
            return UNAVAILABLE;
        }
        return NOT_FOUND_OR_CONFLICT;
    }
}
