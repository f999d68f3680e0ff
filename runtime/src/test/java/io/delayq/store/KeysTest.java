package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;

import org.junit.jupiter.api.Test;

import io.delayq.core.DelayqConfig;

/** The partitions' hash tags: Redis' slot function, the spread rule, and stores of the older rule. */
class KeysTest {
    static Keys keys(int partitions) {
        DelayqConfig config = (DelayqConfig) Proxy.newProxyInstance(DelayqConfig.class.getClassLoader(),
                new Class<?>[] { DelayqConfig.class }, (proxy, method, args) -> switch (method.getName()) {
                    case "prefix" -> "dq";
                    case "partitions" -> partitions;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
        return new Keys(config);
    }

    private static String tag(String key) {
        return key.substring(key.indexOf('{') + 1, key.indexOf('}'));
    }

    @Test
    void slotsAreRedisClusterSlots() {
        // Values of CLUSTER KEYSLOT on Redis 7.
        assertEquals(12182, Keys.slot("foo"));
        assertEquals(5061, Keys.slot("bar"));
        assertEquals(12739, Keys.slot("123456789"));
    }

    @Test
    void partitionsOfATopicSpreadOverEqualSlotRanges() {
        for (int count : new int[] { 2, 3, 6, 12 }) {
            Keys keys = keys(count);
            keys.useLayout(keys.partitionsValue());
            for (String topic : new String[] { "order-close", "a", "bench" }) {
                for (int p = 0; p < count; p++) {
                    String tag = tag(keys.jobs(new Partition(topic, p)));
                    int slot = Keys.slot(tag);
                    assertTrue(slot >= p * 16384 / count && slot < (p + 1) * 16384 / count,
                            tag + " of " + count + " is in slot " + slot);
                    assertTrue(tag.startsWith(topic + "#" + p), tag);
                    assertEquals(tag, tag(keys.due(new Partition(topic, p), 20261130)), "one tag for every key");
                }
            }
        }
    }

    @Test
    void oneTopicPartitionKeepsThePlainTag() {
        Keys keys = keys(1);
        keys.useLayout(keys.partitionsValue());
        assertEquals("1", keys.partitionsValue());
        assertEquals("dq:{order-close#0}:jobs", keys.jobs(new Partition("order-close", 0)));
    }

    @Test
    void aStoreWrittenWithThePlainTagsKeepsThem() {
        Keys keys = keys(3);
        assertEquals("3 spread", keys.partitionsValue());
        assertEquals(3, Keys.countOf("3 spread"));
        keys.useLayout("3"); // what a release before the spread rule wrote
        for (int p = 0; p < 3; p++) {
            assertEquals("dq:{t#" + p + "}:jobs", keys.jobs(new Partition("t", p)));
        }
    }
}
