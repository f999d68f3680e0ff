package io.delayq.core;

/**
 * A request that breaks a rule; it names the field and the rule, and carries the HTTP status the
 * REST API answers with (400, or 413 for a payload over the limit). Nothing was written.
 */
public class InvalidJobException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String field;
    private final int status;

    public InvalidJobException(String field, String message) {
        this(field, message, 400);
    }

    public InvalidJobException(String field, String message, int status) {
        super(message);
        this.field = field;
        this.status = status;
    }

    /** JSON path of the offending field, e.g. {@code topic} or {@code jobs[3].delayMs}. */
    public String field() {
        return field;
    }

    public int status() {
        return status;
    }

    /** The same error, located inside a batch item. */
    public InvalidJobException inItem(String prefix) {
        return new InvalidJobException(prefix + "." + field, getMessage(), status);
    }
}
