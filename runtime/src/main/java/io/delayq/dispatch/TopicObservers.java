package io.delayq.dispatch;

import java.util.List;

/**
 * The application's {@code @JobTopic} observers as the extension found them at build time
 * (ArC's final list of observer methods), set at static init by {@link DelayqRecorder}.
 */
public final class TopicObservers {
    private static volatile List<TopicObserver> observers = List.of();

    private TopicObservers() {
    }

    static void set(List<TopicObserver> found) {
        observers = List.copyOf(found);
    }

    /** Every observer, in the order found. */
    public static List<TopicObserver> all() {
        return observers;
    }
}
