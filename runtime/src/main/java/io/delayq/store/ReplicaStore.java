package io.delayq.store;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * The replicas' entries (one hash: id → JSON, see io.delayq.ops.ReplicaRegistry), read with
 * Redis' clock, by which replicas are judged alive.
 */
@Singleton
public class ReplicaStore extends StorePart {
    @Inject
    public ReplicaStore(StoreLayer layer) {
        super(layer);
    }

    /**
     * Announces a replica (see io.delayq.ops.ReplicaRegistry): {@code json} replaces its entry;
     * and that the topics {@code serves} were in use at Redis time {@code nowMs} (what their
     * retention counts from; empty: nothing recorded). One round trip.
     */
    public void putReplica(String id, String json, Collection<String> serves, long nowMs) {
        List<Request> writes = new ArrayList<>(2);
        writes.add(Request.cmd(Command.HSET).arg(keys.replicas()).arg(id).arg(json));
        if (!serves.isEmpty()) {
            Request active = Request.cmd(Command.HSET).arg(keys.topicsActive());
            serves.forEach(t -> active.arg(t).arg(nowMs));
            writes.add(active);
        }
        readAll(writes);
    }

    /** Every replica's entry, by id, and Redis' clock (epoch ms) when they were read: one round trip. */
    public record ReplicaEntries(long redisNowMs, Map<String, String> entries) {
    }

    /** Every replica's entry, with the Redis time of the read (replicas are judged alive by it). */
    public ReplicaEntries replicasNow() {
        List<Response> r = readAll(List.of(Request.cmd(Command.TIME), Request.cmd(Command.HGETALL).arg(keys.replicas())));
        return new ReplicaEntries(timeMs(r.get(0)), pairs(r.get(1)));
    }

    /** Drops the entries of replicas gone. */
    public void forgetReplicas(List<String> ids) {
        if (!ids.isEmpty()) {
            Request del = Request.cmd(Command.HDEL).arg(keys.replicas());
            ids.forEach(del::arg);
            redis.send(del);
        }
    }
}
