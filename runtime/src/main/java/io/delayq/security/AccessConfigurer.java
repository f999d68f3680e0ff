package io.delayq.security;

import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import io.delayq.core.DelayqConfig;
import io.quarkus.vertx.http.security.HttpSecurity;

/** Adds the {@code delayq.api.token} mechanism to Quarkus Security's, when a token is configured. */
@Singleton
public class AccessConfigurer {
    void configure(@Observes HttpSecurity http, DelayqConfig config) {
        if (config.api().token().filter(t -> !t.isBlank()).isPresent()) {
            http.mechanism(new ApiTokenMechanism());
        }
    }
}
