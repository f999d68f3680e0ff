package io.delayq.dispatch;

import java.util.List;

import io.quarkus.runtime.annotations.Recorder;

/** Hands what the extension found at build time to the running application. */
@Recorder
public class DelayqRecorder {

    /** The application's {@code @JobTopic} observers (see {@link TopicObservers}). */
    public void topicObservers(List<TopicObserver> observers) {
        TopicObservers.set(observers);
    }
}
