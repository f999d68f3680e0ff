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
// Built at start, not by the first call: building it (every script's SHA-1, a timer per script) took
// 2.4 s in a fresh JVM, and an event loop whose first call needed it waited that long (seen as a
// blocked-thread WARN when 2,000 tx/s of outbox rows met a fresh replica).
@io.quarkus.runtime.Startup
public class Scripts {
    public static final List<String> NAMES = List.of("peek", "enqueue", "enqueue1", "take", "ack", "fail", "extend", "reclaim", "requeue",
            "get", "cancel", "revive", "purge", "stats", "snooze", "fence", "flow", "reschedule", "forget",
            "cbtake", "cbsettle", "deadsweep", "history", "list", "bulk", "claim", "claimset", "schedput");

    /**
     * The scripts that only move or delete what Redis holds (and write at most a few bytes of
     * state beside it): on Redis 7 and later they run with {@code #!lua flags=allow-oom}, so that
     * a Redis full under {@code noeviction} (maxmemory reached) still lets the work held finish:
     * leases are extended, jobs acked, failed, reclaimed, cancelled, purged, requeued. Without it
     * a write script whose first write meets a full Redis is refused (OOM): the heartbeat's lease
     * extensions would lapse and every running job would run twice. Intake (enqueue, enqueue1),
     * what only adds (history) and the operator's flow settings (flow, fence) keep Redis' refusal;
     * the read-only scripts (peek, get, stats) write nothing and run either way.
     * Declaring flags changes a script's defaults besides OOM (see Redis' "Script flags"): it is
     * then checked as not "no-writes" (it may write, it runs on masters only, as before), not
     * "allow-stale" (refused on a stale replica: delayq never runs scripts on replicas), and
     * without "allow-cross-slot-keys" (every key it touches must be declared in KEYS and hash to
     * one slot: the rule delayq's scripts already keep, KEYS built by Keys.java, one partition's
     * hash tag, the wake channel too). Redis 6.2 does not know the shebang line: the plain
     * source is used there (see {@link #flagsKnown}).
     */
    public static final java.util.Set<String> ALLOW_OOM = java.util.Set.of("take", "extend", "ack", "fail", "reclaim",
            "requeue", "cancel", "revive", "purge", "snooze", "reschedule", "forget", "cbtake", "cbsettle", "deadsweep");
    /** The first line of a script that may run while Redis is full (Redis 7 and later). */
    static final String ALLOW_OOM_LINE = "#!lua flags=allow-oom\n";

    private final RedisGateway redis;
    private final Map<String, String[]> loaded = new HashMap<>(); // name -> {sha, source}
    /** The allow-oom variants of {@link #ALLOW_OOM} ({sha, source}). */
    private final Map<String, String[]> flagged = new HashMap<>();
    /**
     * Whether the server knows script flags (Redis 7+): learnt by the first call (one INFO server)
     * and again after a failover to another server (a script refused for its shebang).
     */
    private volatile Future<Boolean> flagsKnown;
    private final Map<String, Timer> timers = new HashMap<>();
    /** Enqueues in WAIT at once: a quarter of the Redis pool, so that takes and acks always find connections. */
    private final Turns waiters = new Turns(Math.max(1,
            org.eclipse.microprofile.config.ConfigProvider.getConfig()
                    .getOptionalValue("quarkus.redis.max-pool-size", Integer.class).orElse(16) / 4));

    @jakarta.inject.Inject
    public Scripts(RedisGateway redis, MeterRegistry registry) {
        this(redis, registry, Scripts::read);
    }

    /**
     * Scripts assembled from other sources: {@code sources} gives the text of {@code lib} and of
     * each script by name (the benchmark's markcost compares today's scripts with an earlier
     * release's, read from git, on the same Redis).
     */
    public Scripts(RedisGateway redis, MeterRegistry registry, java.util.function.UnaryOperator<String> sources) {
        this.redis = redis;
        String lib = sources.apply("lib");
        for (String name : NAMES) {
            String source = assemble(lib, sources.apply(name));
            loaded.put(name, new String[] { sha1(source), source });
            if (ALLOW_OOM.contains(name)) {
                flagged.put(name, new String[] { sha1(ALLOW_OOM_LINE + source), ALLOW_OOM_LINE + source });
            }
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
        if (!flagged.containsKey(name)) {
            return bySha(loaded.get(name), keys, args, sender);
        }
        // Known (every call but the first few): run on the caller's thread. A callback of the
        // cached answer would run on the event loop that asked first, and every script would then
        // be sent on that loop's own connection instead of the caller's (EventLoopConnections):
        // one connection for all, which a replica cut off from Redis and back found hung for
        // seconds (PartitionedReplicaIT: new work 10 s after the link was back).
        Future<Boolean> known = flagsKnown();
        if (known.succeeded()) {
            return withFlags(name, known.result(), keys, args, sender);
        }
        return known.compose(k -> withFlags(name, k, keys, args, sender));
    }

    private <T> Future<T> withFlags(String name, boolean known, List<String> keys, List<String> args,
            java.util.function.Function<Request, Future<T>> sender) {
        return bySha(known ? flagged.get(name) : loaded.get(name), keys, args, sender).recover(e -> {
            // A server that does not know the shebang (Redis 6.2 after a failover from 7):
            // learn again, run the plain source.
            if (known && e instanceof RedisReplyException && e.getMessage() != null
                    && (e.getMessage().contains("#!") || e.getMessage().contains("near '#'"))) {
                flagsKnown = Future.succeededFuture(false);
                return bySha(loaded.get(name), keys, args, sender);
            }
            return Future.failedFuture(e);
        });
    }

    private <T> Future<T> bySha(String[] script, List<String> keys, List<String> args,
            java.util.function.Function<Request, Future<T>> sender) {
        return sender.apply(request(Command.EVALSHA, script[0], keys, args)).recover(e -> {
            if (e instanceof RedisReplyException && e.getMessage() != null && e.getMessage().contains("NOSCRIPT")) {
                return sender.apply(request(Command.EVAL, script[1], keys, args));
            }
            return Future.failedFuture(e);
        });
    }

    /**
     * Whether the server knows script flags: Redis 7 or later by {@code INFO server}'s
     * {@code redis_version} (Valkey reports 7.2 there). Asked once; a failed question is asked
     * again by the next call.
     */
    private Future<Boolean> flagsKnown() {
        Future<Boolean> known = flagsKnown;
        if (known == null || known.failed()) {
            known = redis.sendAsync(Request.cmd(Command.INFO).arg("server")).map(r -> serverVersionAtLeast7(r.toString()));
            flagsKnown = known;
        }
        return known;
    }

    /** Whether an {@code INFO server} text names a redis_version of 7 or later. */
    static boolean serverVersionAtLeast7(String info) {
        Matcher m = Pattern.compile("redis_version:(\\d+)").matcher(info);
        return m.find() && Integer.parseInt(m.group(1)) >= 7;
    }

    /** Whether the scripts of {@link #ALLOW_OOM} run with allow-oom on this server (tests). */
    public boolean allowOom() {
        return redis.await(flagsKnown());
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

    /** The text of {@code lua/<name>.lua} among the runtime's resources. */
    public static String read(String name) {
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
