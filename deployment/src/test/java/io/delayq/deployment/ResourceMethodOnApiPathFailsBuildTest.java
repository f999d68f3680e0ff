package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.fail;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.quarkus.test.QuarkusUnitTest;

class ResourceMethodOnApiPathFailsBuildTest {
    @RegisterExtension
    static final QuarkusUnitTest app = BuildErrors.expect(App.class, App.class.getName() + "#list", "delayq.api.enabled=false");

    /** At "/", its method on /topics would be shadowed by delayq's resource at run time. */
    @Path("/")
    public static class App {
        @GET
        @Path("topics")
        public String list() {
            return "mine";
        }
    }

    @Test
    void buildFailsNamingTheCulprit() {
        fail("the build should have failed");
    }
}
