package io.delayq.support;

import java.util.concurrent.atomic.AtomicInteger;

/** Fresh topic names, so that each test has its own keys and no test needs FLUSHALL. */
public final class Topics {
    private static final AtomicInteger SEQ = new AtomicInteger();
    private static final String RUN = Long.toString(System.nanoTime() % 1_000_000, 36);

    private Topics() {
    }

    public static String fresh(String what) {
        return what + "-" + RUN + "-" + SEQ.incrementAndGet();
    }

    /** The key prefix of partition 0 of a topic, as io.delayq.store.Keys builds it. */
    public static String keys(String topic) {
        return "dq:{" + topic + "#0}:";
    }
}
