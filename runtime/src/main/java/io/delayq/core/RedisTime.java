package io.delayq.core;

/**
 * Redis server time, the one clock of every pod, as this host estimates it without a round trip:
 * what the {@link JobValidator} counts a runAt's horizon from. The store's
 * {@code io.delayq.store.RedisClock} is the one implementation; it sits above core, so core asks
 * for this instead.
 */
public interface RedisTime {
    /** Current Redis time in epoch ms, estimated from the last good sample. */
    long redisNow();
}
