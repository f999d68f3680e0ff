package io.delayq.api;

import io.quarkus.test.junit.QuarkusIntegrationTest;

/** Bearer-token checks, against the packaged application. */
@QuarkusIntegrationTest
class AuthIT extends AuthTest {
}
