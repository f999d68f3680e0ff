package io.delayq.store;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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
    public static final List<String> NAMES = List.of("peek", "enqueue", "enqueue1", "take", "ack", "fail", "extend", "reclaim", "requeue",
            "get", "cancel", "revive", "purge", "stats", "snooze", "fence", "flow", "reschedule", "forget",
            "cbtake", "cbsettle", "deadsweep", "history", "list", "bulk");

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
            String source = assemble(lib, read(name));
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

    /** Where lib.lua's optional part begins (see there): everything before it goes into every script. */
    private static final String OPTIONAL = "-- @optional";
    private static final Pattern PARAGRAPHS = Pattern.compile("\\n\\s*\\n");
    /** A definition at the top level of lib.lua: {@code local function f(} or {@code local A, B =}. */
    private static final Pattern DEFINES = Pattern.compile("(?m)^local (?:function (\\w+)|([\\w, ]+?)\\s*=)");
    private static final Pattern COMMENT = Pattern.compile("--[^\\n]*");

    /**
     * A script's source: lib.lua's fixed prelude, then those paragraphs of its optional part that
     * define a name the script uses, directly or through another paragraph taken (in lib.lua's
     * order, so that a function comes after what it calls), then the script. A name counts as used
     * where it appears as a word in code (comments aside, and not as a field after a dot): taking
     * a paragraph too many costs a closure; one too few would fail, so every script is run by the
     * tests.
     */
    public static String assemble(String lib, String script) {
        int cut = lib.indexOf(OPTIONAL);
        if (cut < 0) {
            throw new IllegalStateException("lib.lua lacks its " + OPTIONAL + " marker");
        }
        String[] paragraphs = PARAGRAPHS.split(lib.substring(cut));
        List<List<String>> defines = new ArrayList<>();
        for (String paragraph : paragraphs) {
            List<String> names = new ArrayList<>();
            Matcher m = DEFINES.matcher(paragraph);
            while (m.find()) {
                for (String name : (m.group(1) != null ? m.group(1) : m.group(2)).split(",")) {
                    names.add(name.trim());
                }
            }
            defines.add(names);
        }
        boolean[] taken = new boolean[paragraphs.length];
        StringBuilder used = new StringBuilder(COMMENT.matcher(script).replaceAll(""));
        for (boolean more = true; more;) {
            more = false;
            for (int i = 0; i < paragraphs.length; i++) {
                if (!taken[i] && defines.get(i).stream().anyMatch(name -> mentions(used, name))) {
                    taken[i] = true;
                    used.append('\n').append(COMMENT.matcher(paragraphs[i]).replaceAll(""));
                    more = true;
                }
            }
        }
        StringBuilder source = new StringBuilder(lib.substring(0, cut));
        for (int i = 0; i < paragraphs.length; i++) {
            if (taken[i]) {
                source.append(paragraphs[i]).append("\n\n");
            }
        }
        return source.append(script).toString();
    }

    private static boolean mentions(CharSequence code, String name) {
        return Pattern.compile("(?<![\\w.])" + Pattern.quote(name) + "(?!\\w)").matcher(code).find();
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
