package io.delayq.deployment;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quarkus.test.QuarkusUnitTest;

/** A tiny application that must fail to build, and the texts its build error must contain. */
final class BuildErrors {
    private BuildErrors() {
    }

    static QuarkusUnitTest expect(Class<?> app, String... expected) {
        return new QuarkusUnitTest()
                .withApplicationRoot(jar -> jar.addClass(app))
                .overrideConfigKey("delayq.devservices.enabled", "false")
                .assertException(t -> assertMessages(t, expected));
    }

    static void assertMessages(Throwable t, String... expected) {
        String all = messages(t);
        for (String e : expected) {
            assertTrue(all.contains(e), "build error should contain '" + e + "' but was:\n" + all);
        }
    }

    private static String messages(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c.getMessage()).append('\n');
            for (Throwable s : c.getSuppressed()) {
                b.append(messages(s));
            }
        }
        return b.toString();
    }
}
