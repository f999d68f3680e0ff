package io.delayq.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** The test namespace itself: what the network-fault tests rely on it for. */
class NetNsTest {
    @Test
    void aProcessInsideReachesTheHostEndUntilTheLinkIsCutAndAgainOnceHealedAndNothingIsLeftAfterClose()
            throws Exception {
        String name;
        String hostEnd;
        try (NetNs ns = NetNs.create();
                ServerSocket server = new ServerSocket(0, 50, InetAddress.getByName(ns.hostAddress()))) {
            name = ns.name();
            hostEnd = ns.hostInterface();
            assertEquals(0, connectFromInside(ns, server.getLocalPort()), "connected from inside");
            ns.cut();
            assertNotEquals(0, connectFromInside(ns, server.getLocalPort()), "connected across a cut link");
            ns.heal();
            assertEquals(0, connectFromInside(ns, server.getLocalPort()), "connected once healed");
        }
        assertFalse(NetNs.run(true, "ip", "netns", "list").contains(name), "namespace " + name + " left behind");
        assertFalse(NetNs.run(true, "ip", "-o", "link", "show").contains(hostEnd + "@"), "veth " + hostEnd + " left behind");
    }

    /** Exit status of a TCP connect from inside the namespace to the host end (0: connected), within 2 s. */
    private static int connectFromInside(NetNs ns, int port) throws Exception {
        Process p = new ProcessBuilder(ns.command(List.of("timeout", "2", "bash", "-c", "exec 3<>/dev/tcp/"
                + ns.hostAddress() + "/" + port))).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return -1;
        }
        return p.exitValue();
    }
}
