package io.delayq.support;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import io.quarkus.test.junit.QuarkusTestProfile;

/**
 * The profile of the reactive tests: Vert.x reports an event loop held for more than 500 ms
 * (Quarkus' default is 2 s), checking every 250 ms; fast retries and a short attempt timeout for
 * the reactive observers' topics. {@link #warnings()} captures what the blocked-thread checker logs.
 */
public class StrictEventLoops implements QuarkusTestProfile {
    public static final String CHECKER = "io.vertx.core.impl.BlockedThreadChecker";
    private static final List<String> WARNINGS = new CopyOnWriteArrayList<>();
    // Held: a JUL logger nobody references may be collected, and its handler with it.
    private static Logger checker;

    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("quarkus.vertx.max-event-loop-execute-time", "500ms",
                "quarkus.vertx.warning-exception-time", "250ms",
                "delayq.topics.reactive-uni.retry.initial", "100ms",
                "delayq.topics.reactive-stage.retry.initial", "100ms",
                "delayq.topics.reactive-hang.retry.initial", "100ms",
                "delayq.topics.reactive-hang.attempt-timeout", "500ms",
                "delayq.topics.reactive-result-uni.result-retention", "10m",
                "delayq.topics.reactive-result-stage.result-retention", "10m");
    }

    /** The blocked-thread checker's messages since the last {@link #clearWarnings()} (capturing from the first call). */
    public static synchronized List<String> warnings() {
        if (checker == null) {
            checker = Logger.getLogger(CHECKER);
            checker.addHandler(new Handler() {
                @Override
                public void publish(LogRecord r) {
                    WARNINGS.add(r.getLevel() + " " + r.getMessage());
                }

                @Override
                public void flush() {
                }

                @Override
                public void close() {
                }
            });
        }
        return WARNINGS;
    }

    public static void clearWarnings() {
        warnings().clear();
    }
}
