package com.example.orders;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.eclipse.microprofile.config.ConfigProvider;

/**
 * The Redis that delayq's Dev Service gave this test application, checked to be the one every
 * earlier test class of the run got. Kept in a system property: each Quarkus restart (a new
 * test profile) loads test classes anew, so a static field would not survive it.
 */
final class SameRedisForEveryTestClass {
    private static final String FIRST = "order-service-tests.first-redis";

    private SameRedisForEveryTestClass() {
    }

    static synchronized void check() {
        String hosts = ConfigProvider.getConfig().getValue("quarkus.redis.hosts", String.class);
        assertTrue(hosts.startsWith("redis://127.0.0.1:"), "delayq's Dev Service (a local redis-server), got " + hosts);
        String first = System.getProperty(FIRST);
        if (first == null) {
            System.setProperty(FIRST, hosts);
        } else {
            assertEquals(first, hosts, "the Dev Service's Redis is shared by the test classes of one run");
        }
    }
}
