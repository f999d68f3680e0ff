package io.delayq.bench;

import java.util.ArrayList;
import java.util.List;

import io.delayq.dev.RedisCluster;
import io.delayq.dev.RedisProcess;
import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.annotations.QuarkusMain;

/**
 * Entry point of the benchmark build ({@code bench/run.sh}). The main process starts its own
 * redis-server on a free port, then runs delayq in-process (the real application: REST API,
 * takers, workers) with no-op observers, and drives the scenarios from {@link BenchApp}. With
 * {@code --replica <redis-uri> <records-file>} it is an extra replica process instead, with
 * {@code --receiver <records-file> <port>} the HTTP scenarios' target ({@link HttpReceiver}); with
 * {@code chaos} the nemesis soak ({@link ChaosScenario}), with {@code --chaos-receiver ...} its
 * target ({@link ChaosReceiver}); with {@code outbox} the transactional outbox's relay
 * ({@link OutboxScenario}), with {@code --outbox-load ...} its service process ({@link OutboxLoad}). With
 * {@code --cluster M} Redis is a local Redis Cluster of M masters (no replicas: the figures are
 * the masters' own work), delayq uses it with {@code delayq.partitions} = M unless
 * {@code --partitions P} says otherwise, and the scenarios report each master's CPU.
 */
@QuarkusMain
public class BenchMain {
    public static void main(String... args) throws Exception {
        List<String> rest = new ArrayList<>(List.of(args));
        if (System.getProperty("quarkus.http.port") == null) { // a chaos replica is given its port
            System.setProperty("quarkus.http.port", Integer.toString(RedisProcess.freePort()));
        }
        System.setProperty("quarkus.log.level", "WARN");
        System.setProperty("quarkus.banner.enabled", "false");
        System.setProperty("quarkus.shutdown.delay-enabled", "false");
        if (!rest.isEmpty() && rest.get(0).equals("--receiver")) {
            HttpReceiver.serve(rest.get(1), Integer.parseInt(rest.get(2)));
            return;
        }
        if (!rest.isEmpty() && rest.get(0).equals("--chaos-receiver")) {
            ChaosReceiver.serve(rest.get(1), Integer.parseInt(rest.get(2)), Long.parseLong(rest.get(3)),
                    rest.subList(4, rest.size()));
            return;
        }
        if (!rest.isEmpty() && rest.get(0).equals("chaos")) {
            // Its own Redis, replicas and target: nothing of the in-process set-up below.
            System.exit(ChaosScenario.run(rest.subList(1, rest.size())));
        }
        if (!rest.isEmpty() && rest.get(0).equals("outbox")) {
            // Its own PostgreSQL, Redis and service processes, as chaos.
            System.exit(OutboxScenario.run(rest.subList(1, rest.size())));
        }
        if (!rest.isEmpty() && rest.get(0).equals("--outbox-load")) {
            String mode = rest.get(1);
            System.setProperty("quarkus.redis.hosts", rest.get(2));
            System.setProperty("quarkus.datasource.jdbc.url", rest.get(3));
            System.setProperty("quarkus.datasource.username", "app");
            System.setProperty("quarkus.datasource.jdbc.max-size", "40");
            System.setProperty("delayq.transactions", mode.startsWith("outbox") ? "outbox" : "after-commit");
            System.setProperty("delayq.outbox.listen", Boolean.toString(!mode.equals("outbox-poll")));
            Quarkus.run(OutboxLoad.class, args);
            return;
        }
        if (!rest.isEmpty() && rest.get(0).equals("--replica")) {
            System.setProperty("quarkus.redis.hosts", rest.get(1));
            System.setProperty("bench.replica.records", rest.get(2));
            Quarkus.run(ReplicaApp.class, args);
            return;
        }
        int cluster = intOption(rest, "--cluster", 0);
        if (cluster > 0) {
            RedisCluster redis = RedisCluster.start(cluster, 0);
            Runtime.getRuntime().addShutdownHook(new Thread(redis::close));
            System.setProperty("quarkus.redis.client-type", "cluster");
            System.setProperty("quarkus.redis.hosts", redis.hostsUri());
            System.setProperty("delayq.partitions", Integer.toString(intOption(rest, "--partitions", cluster)));
            System.setProperty("bench.redis.nodes", String.join(",", redis.masters().stream().map(String::valueOf).toList()));
            System.setProperty("bench.redis.pid", "cluster of " + cluster + " masters " + redis.masters());
        } else {
            RedisProcess redis = RedisProcess.startEphemeral();
            Runtime.getRuntime().addShutdownHook(new Thread(redis::stop));
            System.setProperty("quarkus.redis.hosts", redis.uri());
            System.setProperty("bench.redis.nodes", Integer.toString(redis.port()));
            System.setProperty("bench.redis.pid", Long.toString(redis.pid()));
        }
        // The HTTP scenarios' target: a process of its own, so that its CPU is not counted as delayq's.
        HttpReceiver receiver = HttpReceiver.start();
        System.setProperty("delayq.topics.bench-http.http.url", receiver.url());
        System.setProperty("delayq.topics.bench-h2c.http.url", receiver.url());
        // The same target signed with two keys (a rotation's middle step), for HttpScenario's signing cost.
        System.setProperty("delayq.topics." + HttpScenario.SIGNED_TOPIC + ".http.url", receiver.url());
        System.setProperty("delayq.topics." + HttpScenario.SIGNED_TOPIC + ".http.signing-keys", HttpScenario.BENCH_KEYS);
        System.setProperty("delayq.topics.bench-h2c.http.h2c", "true");
        HttpScenario.receiver = receiver;
        serveManyTopics(rest, cluster > 0);
        Quarkus.run(BenchApp.class, rest.toArray(String[]::new));
    }

    /**
     * The topics scenario ({@link TopicsScenario}) needs its topics served from the start: HTTP
     * targets configured as a user would ({@code delayq.topics.<t>.http.url}), {@code --topics N}
     * of them (250; 100 in the smoke set), with {@code --partitions P} each (4; the smoke set keeps
     * 1, so its other scenarios run as usual). Every scenario of that run serves them too.
     */
    private static void serveManyTopics(List<String> args, boolean cluster) {
        boolean asked = args.stream().anyMatch(a -> List.of(a.split(",")).contains("topics"));
        boolean smoke = args.contains("smoke");
        int topics = intOption(args, "--topics", smoke && !asked ? 100 : 250);
        if (!asked && !smoke) {
            return;
        }
        if (!cluster) {
            System.setProperty("delayq.partitions", Integer.toString(intOption(args, "--partitions", asked ? 4 : 1)));
        }
        HttpSink sink = new HttpSink();
        BenchApp.sink = sink;
        System.setProperty("delayq.topics." + TopicsScenario.TOPIC_ONE + ".http.url", sink.url());
        for (int t = 0; t < topics; t++) {
            System.setProperty("delayq.topics." + TopicsScenario.topic(t) + ".http.url", sink.url());
        }
        System.setProperty("bench.topics", Integer.toString(topics));
    }

    /** Removes {@code name value} from the arguments and returns the value (or the default). */
    private static int intOption(List<String> args, String name, int dflt) {
        int at = args.indexOf(name);
        if (at < 0 || at + 1 >= args.size()) {
            return dflt;
        }
        int v = Integer.parseInt(args.get(at + 1));
        args.remove(at + 1);
        args.remove(at);
        return v;
    }
}
