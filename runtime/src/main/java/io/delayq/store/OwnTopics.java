package io.delayq.store;

/**
 * The topics this replica serves or configures: the only names the store keeps something for
 * (the key tags it caches, the topics it trusts listed). Any other name can come in a request, so
 * nothing is kept for it. Told from above the store (io.delayq.ops.LocalTopics knows the
 * observers and the configuration), so that the store imports nothing of the packages that use it.
 */
public interface OwnTopics {
    /** Whether this replica serves or configures the topic. */
    boolean contains(String topic);
}
