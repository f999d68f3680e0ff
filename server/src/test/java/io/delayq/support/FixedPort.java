package io.delayq.support;

import java.io.IOException;
import java.net.ServerSocket;

/**
 * A free port chosen once per run and name: a test profile that points an HTTP target at the
 * test application itself must give it a known port, and the profile is instantiated by more
 * than one class loader, so the choice is kept in a system property.
 */
public final class FixedPort {
    private FixedPort() {
    }

    public static synchronized int forRun(String name) {
        String key = "dqtest." + name + ".port";
        String port = System.getProperty(key);
        if (port == null) {
            try (ServerSocket s = new ServerSocket(0)) {
                port = Integer.toString(s.getLocalPort());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
            System.setProperty(key, port);
        }
        return Integer.parseInt(port);
    }
}
