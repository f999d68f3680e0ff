package io.delayq.store;

/** One partition of a topic: the unit that owns a set of keys under one hash tag. */
public record Partition(String topic, int index) {
    @Override
    public String toString() {
        return topic + "#" + index;
    }
}
