package org.acme;

import io.delayq.core.Job;
import io.delayq.core.JobTopic;
import io.quarkus.logging.Log;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

/** Runs every job of the topic "greeting"; NewUserIT waits for the line it logs. */
@ApplicationScoped
class Greeter {

    void greet(@Observes @JobTopic("greeting") Job job) {
        Log.infof("RECEIVED %s %s %s", job.topic(), job.id(), job.payloadJson());
    }
}
