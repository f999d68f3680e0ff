package io.delayq.store;

/** Redis answered a command with an error reply (a script error, NOSCRIPT, a wrong type). */
public class RedisReplyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RedisReplyException(String message, Throwable cause) {
        super(message, cause);
    }
}
