package io.delayq.cli;

import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.delayq.cli.Output.Column;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code delayq dead list|requeue|purge}: a topic's dead-letter set. */
@Command(name = "dead", mixinStandardHelpOptions = true,
        description = "A topic's dead jobs (out of attempts): list, requeue, purge.",
        subcommands = { DeadCommand.ListDead.class, DeadCommand.Requeue.class, DeadCommand.Purge.class },
        footer = { "", "Example:", "  delayq dead list orders --error timeout" })
class DeadCommand {

    @Command(name = "list", mixinStandardHelpOptions = true,
            description = "Dead jobs of a topic, newest first, with their last error.",
            footer = { "", "Example:", "  delayq dead list orders --id-prefix order- --limit 20" })
    static class ListDead extends ApiCommand {
        @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
        String topic;

        @Option(names = "--id-prefix", paramLabel = "P", description = "Only ids that start with P.")
        String idPrefix;

        @Option(names = "--error", paramLabel = "TEXT", description = "Only jobs whose last error contains TEXT.")
        String error;

        @Option(names = "--limit", paramLabel = "N", defaultValue = "100",
                description = "At most N jobs, 1 to 1000 (default ${DEFAULT-VALUE}).")
        int limit;

        @Override
        void run(Api api, Output out) {
            StringBuilder q = new StringBuilder("?limit=").append(limit);
            if (idPrefix != null) {
                q.append("&idPrefix=").append(Api.enc(idPrefix));
            }
            if (error != null) {
                q.append("&error=").append(Api.enc(error));
            }
            Api.Reply r = api.get(topicPath(topic) + "/dead" + q);
            JsonNode dead = r.body();
            out.list(dead, List.of(Column.of("ID", "id"), Column.time("DIED", "diedAt"),
                    Column.of("ATTEMPTS", "attempts"),
                    new Column("LAST ERROR", row -> Output.cut(Output.plain(row.get("lastError")), 70))));
            // The server examined only the newest dead jobs of each partition for the filters: say so, off stdout.
            r.headers().firstValue("X-Delayq-Truncated").ifPresent(n -> spec.commandLine().getErr().println(
                    "delayq: the filters were applied to the newest " + n + " dead jobs of each partition only"));
        }
    }

    /** What requeue and purge act on: one id, or every dead job of the topic that the filters match. */
    abstract static class Selection extends ApiCommand {
        @Parameters(index = "0", paramLabel = "TOPIC", description = "The topic.")
        String topic;

        @Parameters(index = "1", arity = "0..1", paramLabel = "ID", description = "One dead job.")
        String id;

        @Option(names = "--all", description = "Every job dead at the call.")
        boolean all;

        @Option(names = "--id-prefix", paramLabel = "P", description = "Every dead job whose id starts with P.")
        String idPrefix;

        @Option(names = "--error", paramLabel = "TEXT", description = "Every dead job whose last error contains TEXT "
                + "(with --id-prefix: both).")
        String error;

        /** The filter body of the bulk call, after checking that exactly one way was chosen; null for one id. */
        ObjectNode filter() {
            boolean filtered = idPrefix != null || error != null;
            int ways = (id != null ? 1 : 0) + (all ? 1 : 0) + (filtered ? 1 : 0);
            if (ways != 1) {
                throw usage("give one of ID, --all, or --id-prefix P and/or --error TEXT");
            }
            if (id != null) {
                return null;
            }
            ObjectNode body = Api.JSON.createObjectNode();
            if (idPrefix != null) {
                body.put("idPrefix", idPrefix);
            }
            if (error != null) {
                body.put("error", error);
            }
            return body;
        }
    }

    @Command(name = "requeue", mixinStandardHelpOptions = true,
            description = "Dead jobs back to scheduled, due now, attempts reset: one by id, or all those dead at the "
                    + "call that match.",
            footer = { "", "Example:", "  delayq dead requeue orders order-42",
                    "  delayq dead requeue orders --error 'connection refused'" })
    static class Requeue extends Selection {
        @Override
        void run(Api api, Output out) {
            ObjectNode filter = filter();
            if (filter == null) {
                JsonNode job = api.post(topicPath(topic) + "/dead/" + Api.enc(id) + "/requeue", null).body();
                out.said("requeued: " + topic + "/" + id + ", due now", job);
                return;
            }
            JsonNode r = api.post(topicPath(topic) + "/dead/requeue", filter.toString()).body();
            out.said("requeued " + r.path("requeued").asLong() + " dead jobs of " + topic + ", due now", r);
        }
    }

    @Command(name = "purge", mixinStandardHelpOptions = true,
            description = "Delete dead jobs for good: one by id, or all those dead at the call that match.",
            footer = { "", "Example:", "  delayq dead purge orders order-42", "  delayq dead purge orders --all" })
    static class Purge extends Selection {
        @Override
        void run(Api api, Output out) {
            ObjectNode filter = filter();
            if (filter == null) {
                api.delete(topicPath(topic) + "/dead/" + Api.enc(id));
                out.said("purged: " + topic + "/" + id, Api.JSON.createObjectNode().put("purged", 1));
                return;
            }
            JsonNode r = api.post(topicPath(topic) + "/dead/purge", filter.toString()).body();
            out.said("purged " + r.path("purged").asLong() + " dead jobs of " + topic, r);
        }
    }
}
