package io.delayq.store;

/**
 * Redis refused the credentials delayq connects with ({@code WRONGPASS}: a wrong user or
 * password; {@code NOAUTH}: Redis wants a password and none was given). No command ran. The
 * service cannot do anything until its configuration or Redis' is fixed, but nothing it was asked
 * is wrong: the API answers 503 with Retry-After (as for a Redis away), readiness is DOWN saying
 * why, and the message names the cause, never a password (Redis' reply carries none).
 */
public class RedisCredentialsException extends StoreUnavailableException {
    private static final long serialVersionUID = 1L;

    public RedisCredentialsException(String reply, Throwable cause) {
        super("Redis refused delayq's credentials (" + reply.strip() + "): set the user and password Redis expects"
                + " in quarkus.redis.hosts (redis://user:password@host:port) or quarkus.redis.password", cause, true);
    }
}
