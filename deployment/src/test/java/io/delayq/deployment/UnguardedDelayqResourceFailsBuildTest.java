package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.delayq.ui.UnguardedPage;
import io.quarkus.test.QuarkusUnitTest;

class UnguardedDelayqResourceFailsBuildTest {
    @RegisterExtension
    static final QuarkusUnitTest app = BuildErrors.expect(UnguardedPage.class, UnguardedPage.class.getName(),
            "@AuthorizationPolicy(name = DelayqAccessPolicy.NAME)");

    @Test
    void buildFailsNamingTheResource() {
        fail("the build should have failed");
    }
}
