package io.delayq.core;

/**
 * A validated job about to be enqueued (the store's input).
 *
 * @param delayed true: runAt = Redis now + {@code millis}; false: runAt = {@code millis} (epoch ms)
 * @param maxAttempts 0 = the topic's default
 * @param payloadJson the payload JSON as sent, {@code null} when the job has no payload
 */
public record NewJob(String topic, String id, boolean delayed, long millis, int maxAttempts, String payloadJson) {
}
