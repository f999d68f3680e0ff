package com.example.orders;

import java.util.Map;

import org.junit.jupiter.api.Test;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * A test profile restarts the application; delayq's Dev Service keeps its Redis (its own
 * settings did not change), so the restarted application finds the same server.
 */
@QuarkusTest
@TestProfile(DevServiceSharedAcrossRestartTest.LongerTimeout.class)
class DevServiceSharedAcrossRestartTest {

    public static class LongerTimeout implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("orders.payment-timeout", "1m");
        }
    }

    @Test
    void aRestartedApplicationGetsTheSameRedis() {
        SameRedisForEveryTestClass.check();
    }
}
