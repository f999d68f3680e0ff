package io.delayq.bench;

import java.util.ArrayList;
import java.util.List;

import io.delayq.dev.RedisProcess;
import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.annotations.QuarkusMain;

/**
 * Entry point of the benchmark build ({@code bench/run.sh}). The main process starts its own
 * redis-server on a free port, then runs delayq in-process (the real application: REST API,
 * takers, workers) with no-op observers, and drives the scenarios from {@link BenchApp}. With
 * {@code --replica <redis-uri> <records-file>} it is an extra replica process instead.
 */
@QuarkusMain
public class BenchMain {
    public static void main(String... args) {
        List<String> rest = new ArrayList<>(List.of(args));
        System.setProperty("quarkus.http.port", Integer.toString(RedisProcess.freePort()));
        System.setProperty("quarkus.log.level", "WARN");
        System.setProperty("quarkus.banner.enabled", "false");
        System.setProperty("quarkus.shutdown.delay-enabled", "false");
        if (!rest.isEmpty() && rest.get(0).equals("--replica")) {
            System.setProperty("quarkus.redis.hosts", rest.get(1));
            System.setProperty("bench.replica.records", rest.get(2));
            Quarkus.run(ReplicaApp.class, args);
            return;
        }
        RedisProcess redis = RedisProcess.startEphemeral();
        Runtime.getRuntime().addShutdownHook(new Thread(redis::stop));
        System.setProperty("quarkus.redis.hosts", redis.uri());
        System.setProperty("bench.redis.pid", Long.toString(redis.pid()));
        HttpSink sink = new HttpSink();
        System.setProperty("delayq.topics.bench-http.http.url", sink.url());
        BenchApp.sink = sink;
        Quarkus.run(BenchApp.class, args);
    }
}
