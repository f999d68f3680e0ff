package io.delayq.core;

/**
 * What {@link TopicControl#forget} (and {@code DELETE /topics/{topic}}) did.
 *
 * @param detail why a topic was not forgotten, for a person (null when it was)
 */
public record ForgetResult(Outcome outcome, String detail) {
    public enum Outcome {
        /** Gone from the known topics, with its pause, rate limit, tick records and dedup ids. */
        FORGOTTEN,
        /** Not a known topic. */
        UNKNOWN,
        /** A live replica serves it: it stays. */
        SERVED,
        /** It holds jobs (scheduled, in flight or dead), or one came in meanwhile: it stays. */
        HAS_JOBS
    }
}
