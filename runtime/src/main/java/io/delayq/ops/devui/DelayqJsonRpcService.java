package io.delayq.ops.devui;

import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayq.dispatch.TopicRegistry;
import io.delayq.store.Inspection;
import io.delayq.store.TopicStats;

/**
 * Backs the Dev UI card (dev mode only): every topic in Redis or served here, with what serves
 * it on this replica (observer {@code class#method}, or the HTTP target) and its counts.
 */
public class DelayqJsonRpcService {
    private final Inspection store;
    private final TopicRegistry registry;

    public DelayqJsonRpcService(Inspection store, TopicRegistry registry) {
        this.store = store;
        this.registry = registry;
    }

    /** One row of the card's table. */
    public record TopicRow(String topic, String servedBy, long scheduled, long inflight, long dead, String nextDueAt) {
    }

    public List<TopicRow> topics() {
        Map<String, TopicStats> stats = new LinkedHashMap<>();
        registry.handlers().keySet().forEach(t -> stats.put(t, new TopicStats(t, 0, 0, 0, -1)));
        store.topics().forEach(s -> stats.put(s.topic(), s));
        List<TopicRow> rows = new ArrayList<>();
        stats.values().stream().sorted((a, b) -> a.topic().compareTo(b.topic())).forEach(s -> rows.add(new TopicRow(
                s.topic(),
                registry.serves(s.topic()) ? registry.handlers().get(s.topic()).describe() : "not served by this replica",
                s.scheduled(), s.inflight(), s.dead(),
                s.nextDue() < 0 ? "" : Instant.ofEpochMilli(s.nextDue()).toString())));
        return rows;
    }
}
