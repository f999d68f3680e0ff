package io.delayq.core;

import static java.lang.annotation.ElementType.PARAMETER;
import static java.lang.annotation.RetentionPolicy.RUNTIME;

import java.lang.annotation.Documented;
import java.lang.annotation.Retention;
import java.lang.annotation.Target;

import jakarta.enterprise.util.AnnotationLiteral;
import jakarta.inject.Qualifier;

/**
 * Names the topic a {@link Job} observer runs: {@code void close(@Observes @JobTopic("order-close") Job job)}.
 * A replica takes jobs only of the topics it has observers for. Only the event parameter of an
 * observer may carry it: the build fails, naming the method, anywhere else.
 */
@Qualifier
@Documented
@Retention(RUNTIME)
@Target(PARAMETER)
public @interface JobTopic {

    /** The topic name, {@code [a-z0-9][a-z0-9._-]{0,63}}. */
    String value();

    /** Builds the qualifier for a topic, to fire or select events programmatically. */
    final class Literal extends AnnotationLiteral<JobTopic> implements JobTopic {
        private static final long serialVersionUID = 1L;
        private final String value;

        private Literal(String value) {
            this.value = value;
        }

        public static Literal of(String topic) {
            return new Literal(topic);
        }

        @Override
        public String value() {
            return value;
        }
    }
}
