package io.delayq.support;

import java.io.IOException;
import java.net.ServerSocket;

/**
 * A free port chosen once per run and name: a test profile that points an HTTP target at the
 * test application itself must give it a known port, and the profile is instantiated by more
 * than one class loader, so the choice is kept in a system property. The port is bound only when
 * that profile's application starts, maybe minutes later: it is taken below Linux' ephemeral
 * range (32768-60999), where the outgoing connections and the other tests' free ports of the
 * meantime do not land (a CI run once lost it to one of them).
 */
public final class FixedPort {
    private FixedPort() {
    }

    public static synchronized int forRun(String name) {
        String key = "dqtest." + name + ".port";
        String port = System.getProperty(key);
        if (port == null) {
            java.util.Random random = new java.util.Random();
            for (int attempt = 0; port == null; attempt++) {
                int candidate = 20_000 + random.nextInt(12_000);
                try (ServerSocket s = new ServerSocket(candidate, 1, java.net.InetAddress.getLoopbackAddress())) {
                    port = Integer.toString(s.getLocalPort());
                } catch (IOException e) {
                    if (attempt > 100) {
                        throw new IllegalStateException("no free port in 20000-31999", e);
                    }
                }
            }
            System.setProperty(key, port);
        }
        return Integer.parseInt(port);
    }
}
