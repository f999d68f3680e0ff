package io.delayq.api;

import io.quarkus.test.junit.QuarkusIntegrationTest;

/** The REST ingestion tests, rerun against the packaged application (jar, or native binary with -Dnative). */
@QuarkusIntegrationTest
class EnqueueIT extends EnqueueTest {
}
