package io.delayq.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import io.delayq.dev.RedisCluster;
import io.delayq.dev.Resp;
import io.delayq.ops.RedisMemory;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;

/**
 * {@code delayq_redis_memory_used_ratio} on a Redis Cluster of three masters (a real one): each
 * master is read apart, by one reader a minute (its claim a key that master serves), into a gauge
 * of its own tagged {@code node}.
 */
class RedisMemoryClusterTest {
    @Test
    void eachMasterIsReadOnceAMinuteIntoAGaugeOfItsOwn() {
        Vertx vertx = Vertx.vertx();
        try (RedisCluster cluster = RedisCluster.start(3, 0)) {
            List<String> endpoints = List.of(cluster.hostsUri().split(","));
            Redis client = Redis.createClient(vertx, new RedisOptions().setType(RedisClientType.CLUSTER)
                    .setEndpoints(new ArrayList<>(endpoints)).setMaxPoolSize(8).setMaxPoolWaiting(64));
            var config = HandBuiltStore.read();
            RedisGateway gateway = new RedisGateway(client, config, new SimpleMeterRegistry()) {
                @Override
                public boolean cluster() {
                    return true; // as quarkus.redis.client-type=cluster makes it
                }
            };
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            RedisNodes nodes = new RedisNodes(vertx, new RedisOptions().setEndpoints(new ArrayList<>(endpoints)));
            // The second replica's reader: the same Redis, a registry of its own.
            SimpleMeterRegistry otherRegistry = new SimpleMeterRegistry();
            RedisMemory memory = new RedisMemory(gateway, new Keys(config), registry, nodes);
            RedisMemory other = new RedisMemory(gateway, new Keys(config), otherRegistry, nodes);
            Set<String> masters = new TreeSet<>();
            for (int port : cluster.masters()) {
                masters.add("127.0.0.1:" + port);
                try (Resp r = cluster.node(port)) {
                    r.call("CONFIG", "SET", "maxmemory", "1000000000");
                }
            }

            assertEquals(masters, new TreeSet<>(memory.readMasters()), "every master read, first this minute");
            assertEquals(List.of(), other.readMasters(), "each master's claim is taken: one reader per master a minute");
            List<Gauge> gauges = new ArrayList<>(registry.find("delayq.redis.memory.used.ratio").gauges());
            assertEquals(3, gauges.size());
            Set<String> tagged = new TreeSet<>();
            for (Gauge g : gauges) {
                tagged.add(g.getId().getTag("node"));
                assertTrue(g.value() > 0 && g.value() < 1, "used / maxmemory of " + g.getId() + ": " + g.value());
            }
            assertEquals(masters, tagged);
            assertTrue(otherRegistry.find("delayq.redis.memory.used.ratio").gauges().isEmpty());
            // Each claim lives on the master it is for.
            cluster.keysByMaster("dq:memory-read*").forEach((port, keys) -> assertEquals(1, keys.size(), port + ": " + keys));

            // A master without a maxmemory has no gauge; the others keep theirs.
            int first = cluster.masters().get(0);
            try (Resp r = cluster.node(first)) {
                r.call("CONFIG", "SET", "maxmemory", "0");
            }
            for (int port : cluster.masters()) {
                try (Resp r = cluster.node(port)) {
                    r.call("DEL", cluster.keysByMaster("dq:memory-read*").get(port).get(0));
                }
            }
            assertEquals(masters, new TreeSet<>(other.readMasters()));
            assertEquals(2, otherRegistry.find("delayq.redis.memory.used.ratio").gauges().size());
            assertTrue(otherRegistry.find("delayq.redis.memory.used.ratio").tag("node", "127.0.0.1:" + first).gauges().isEmpty());
            client.close();
        } finally {
            vertx.close();
        }
    }
}
