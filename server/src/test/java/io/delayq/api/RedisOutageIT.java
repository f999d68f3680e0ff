package io.delayq.api;

import io.quarkus.test.junit.QuarkusIntegrationTest;

/** Redis outage and recovery, against the packaged application. */
@QuarkusIntegrationTest
class RedisOutageIT extends RedisOutageTest {
}
