package io.delayq.store;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * The Lua scripts of {@code src/main/resources/lua}: each is {@code lib.lua} followed by the
 * script, read once, and run by SHA. Redis loses its script cache on restart and failover, so
 * a NOSCRIPT reply is answered with EVAL of the source (which caches it again).
 */
@ApplicationScoped
public class Scripts {
    static final List<String> NAMES = List.of("peek", "enqueue", "take", "ack", "fail", "extend", "reclaim", "requeue",
            "get", "cancel", "revive", "purge", "stats", "snooze", "fence", "flow", "reschedule");

    private final RedisGateway redis;
    private final Map<String, String[]> loaded = new HashMap<>(); // name -> {sha, source}
    private final Map<String, Timer> timers = new HashMap<>();
    /** Enqueues in WAIT at once: a quarter of the Redis pool, so that takes and acks always find connections. */
    private final Turns waiters = new Turns(Math.max(1,
            org.eclipse.microprofile.config.ConfigProvider.getConfig()
                    .getOptionalValue("quarkus.redis.max-pool-size", Integer.class).orElse(16) / 4));

    public Scripts(RedisGateway redis, MeterRegistry registry) {
        this.redis = redis;
        String lib = read("lib");
        for (String name : NAMES) {
            String source = lib + "\n" + read(name);
            loaded.put(name, new String[] { sha1(source), source });
            // Tagged by script, not topic: where Redis time goes (take vs enqueue vs ack) is the question.
            timers.put(name, Timer.builder("delayq.redis.script").description("Round trip of one script call, by script")
                    .tag("script", name).publishPercentileHistogram()
                    .minimumExpectedValue(Duration.ofNanos(100_000)).maximumExpectedValue(Duration.ofSeconds(10))
                    .register(registry));
        }
    }

    /** Runs a script by SHA with the given keys and arguments; EVAL once when Redis lacks it. */
    public Response run(String name, List<String> keys, List<String> args) {
        return redis.await(runAsync(name, keys, args, null));
    }

    /** As above; {@code late} (if not null) gets a reply that arrives after the call timed out. */
    public Response run(String name, List<String> keys, List<String> args, Consumer<Response> late) {
        return redis.await(runAsync(name, keys, args, late));
    }

    /** As {@link #run(String, List, List, Consumer)}, holding no thread. */
    public Future<Response> runAsync(String name, List<String> keys, List<String> args, Consumer<Response> late) {
        return timed(name, System.nanoTime(),
                bySha(name, keys, args, call -> late == null ? redis.sendAsync(call) : redis.sendAsync(call, late)));
    }

    /**
     * Runs a script and then Redis {@code WAIT} on the same connection (one pipelined round trip):
     * the reply comes once the script's writes reached {@code replicas} replicas, or fails as
     * "Redis unavailable" when they did not within {@code waitMs}.
     */
    public Response runReplicated(String name, List<String> keys, List<String> args, int replicas, long waitMs) {
        return redis.await(runReplicatedAsync(name, keys, args, replicas, waitMs));
    }

    /** As {@link #runReplicated}, holding no thread (nor while it waits for its turn). */
    public Future<Response> runReplicatedAsync(String name, List<String> keys, List<String> args, int replicas,
            long waitMs) {
        long start = System.nanoTime();
        // WAIT holds its pooled connection until the replicas answer (up to waitMs when one is
        // down): without a bound, a stream of enqueues would hold every connection and starve
        // the takes and acks of the jobs already accepted.
        Future<Response> replicated = waiters.acquire(waitMs).recover(e -> Future.failedFuture(redis.unavailable(
                new StoreUnavailableException("too many enqueues waiting for Redis replicas"
                        + " (delayq.durability.replicas): are the replicas up?", null))))
                .compose(turn -> {
                    Request wait = Request.cmd(Command.WAIT).arg(replicas).arg(waitMs);
                    return bySha(name, keys, args, call -> redis.batchAsync(List.of(call, wait), waitMs))
                            .onComplete(done -> waiters.release())
                            .compose(replies -> {
                                int reached = replies.get(1).toInteger();
                                if (reached < replicas) {
                                    return Future.failedFuture(redis.unavailable(new NotReplicatedException("the write reached "
                                            + reached + " of the " + replicas + " Redis replicas of delayq.durability.replicas"
                                            + " within " + waitMs + " ms")));
                                }
                                return Future.succeededFuture(replies.get(0));
                            });
                });
        return timed(name, start, replicated);
    }

    private <T> Future<T> timed(String name, long start, Future<T> call) {
        return call.onComplete(done -> timers.get(name).record(System.nanoTime() - start, TimeUnit.NANOSECONDS));
    }

    /**
     * Sends the script's EVALSHA call; when Redis lacks the script (NOSCRIPT, also inside a batch's
     * "ERR [i] NOSCRIPT ..."), the EVAL of its source instead.
     */
    private <T> Future<T> bySha(String name, List<String> keys, List<String> args,
            java.util.function.Function<Request, Future<T>> sender) {
        String[] script = loaded.get(name);
        return sender.apply(request(Command.EVALSHA, script[0], keys, args)).recover(e -> {
            if (e instanceof RedisReplyException && e.getMessage() != null && e.getMessage().contains("NOSCRIPT")) {
                return sender.apply(request(Command.EVAL, script[1], keys, args));
            }
            return Future.failedFuture(e);
        });
    }

    private static Request request(Command command, String script, List<String> keys, List<String> args) {
        Request request = Request.cmd(command).arg(script).arg(keys.size());
        for (String key : keys) {
            request.arg(key);
        }
        for (String arg : args) {
            request.arg(arg);
        }
        return request;
    }

    private static String read(String name) {
        String path = "lua/" + name + ".lua";
        try (InputStream in = Scripts.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + path);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String sha1(String source) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(source.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
