package com.example.orders;

import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * The payload of an {@code order-close} job. Jackson writes it when the job is scheduled and
 * reads it back in the observer; no REST endpoint mentions this type, so nothing else would
 * register it for reflection in a native image.
 */
@RegisterForReflection
public record OrderClose(String orderId) {
}
