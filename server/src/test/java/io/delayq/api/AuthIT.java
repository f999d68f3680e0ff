package io.delayq.api;

import io.quarkus.test.junit.QuarkusIntegrationTest;

/** The API token as the only credential, against the packaged application. */
@QuarkusIntegrationTest
class AuthIT extends AuthTest {
}
