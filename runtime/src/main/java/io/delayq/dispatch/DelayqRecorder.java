package io.delayq.dispatch;

import java.util.List;
import java.util.Map;

import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.logging.Logger;

import io.quarkus.runtime.annotations.Recorder;

/** Hands what the extension found at build time to the running application. */
@Recorder
public class DelayqRecorder {
    private static final Logger LOG = Logger.getLogger(DelayqRecorder.class);

    /**
     * Warns when a build-time setting is given another value at run time (in the environment of
     * a pod, say): it has no effect there, and silence would suggest it had.
     */
    public void warnOnBuildTimeOverrides(Map<String, Boolean> builtWith) {
        Config config = ConfigProvider.getConfig();
        builtWith.forEach((name, built) -> config.getOptionalValue(name, Boolean.class)
                .filter(now -> !now.equals(built))
                .ifPresent(now -> LOG.warnf("%s=%s is ignored: it is fixed when the application is built (built with %s)",
                        name, now, built)));
    }

    /** The application's {@code @JobTopic} observers (see {@link TopicObservers}). */
    public void topicObservers(List<TopicObserver> observers) {
        TopicObservers.set(observers);
    }
}
