package io.delayq.support;

import io.delayq.dev.RedisCluster;
import io.delayq.dev.Resp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisProcess;

/** The test cluster itself: what the cluster tests rely on it for. */
class RedisClusterTest {
    @Test
    void startsThreeMastersWithAReplicaEachAndFindsWhereAKeyLivesThenLeavesNoServerBehind() {
        List<Integer> ports;
        try (RedisCluster cluster = RedisCluster.start()) {
            ports = new ArrayList<>(cluster.ports());
            assertEquals(6, ports.size());
            assertEquals(3, cluster.masters().size(), "masters " + cluster.masters());
            assertEquals(3, cluster.replicas().size(), "replicas " + cluster.replicas());
            Set<Integer> all = new HashSet<>(cluster.masters());
            all.addAll(cluster.replicas());
            assertEquals(Set.copyOf(ports), all);
            assertEquals(ports.size(), cluster.hostsUri().split(",").length);

            // Where the cluster says a key lives, a write succeeds; elsewhere it is redirected.
            Set<Integer> used = new HashSet<>();
            for (String key : List.of("a", "b", "c", "{x}:1", "dq:{t#0}:jobs", "dq:{t#1}:jobs", "dq:{t#2}:jobs")) {
                int slot = cluster.keySlot(key);
                int master = cluster.masterOfSlot(slot);
                assertEquals(master, cluster.masterOfKey(key));
                used.add(master);
                long before = cluster.commandsProcessed(master);
                try (Resp r = cluster.node(master)) {
                    assertEquals("OK", r.str("SET", key, "v"));
                }
                assertTrue(cluster.commandsProcessed(master) > before, "the SET was counted on " + master);
                int other = cluster.masters().stream().filter(m -> m != master).findFirst().orElseThrow();
                try (Resp r = cluster.node(other)) {
                    IllegalStateException moved = assertThrows(IllegalStateException.class, () -> r.call("SET", key, "v"));
                    assertTrue(moved.getMessage().startsWith("MOVED " + slot + " 127.0.0.1:" + master), moved.getMessage());
                }
            }
            assertTrue(used.size() > 1, "seven keys all on one master: " + used);
            assertEquals(3, cluster.keysByMaster("dq:*").values().stream().mapToInt(List::size).sum());
            assertTrue(cluster.infoCpu(cluster.masters().get(0)) > 0);
            assertNotEquals(0, cluster.logTail(ports.get(0), 5).length());
        }
        for (int port : ports) {
            assertFalse(RedisProcess.ping("redis://127.0.0.1:" + port), "a node still answers on " + port);
        }
    }
}
