package io.delayq.store;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import io.delayq.core.DelayqConfig;
import io.vertx.core.Future;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.impl.types.ErrorType;

/**
 * The one door to Redis: blocking calls with a timeout, for callers on worker or virtual threads
 * (never the event loop). Redis error replies become {@link RedisReplyException}; everything that
 * means "Redis is not there right now" becomes {@link StoreUnavailableException}.
 */
@ApplicationScoped
public class RedisGateway {
    // Replies that mean "not now" rather than "wrong request".
    private static final List<String> TRANSIENT = List.of("LOADING", "BUSY", "MASTERDOWN", "READONLY",
            "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS", "OOM");
    private final Redis redis;
    private final long timeoutMs;
    private final Counter unavailable;
    private final Counter errorReplies;
    private volatile boolean answering = true;

    public RedisGateway(Redis redis, DelayqConfig config, MeterRegistry registry) {
        this.redis = redis;
        this.timeoutMs = config.redisTimeout().toMillis();
        this.unavailable = Counter.builder("delayq.redis.errors").description("Redis calls that failed, by kind")
                .tag("kind", "unavailable").register(registry);
        this.errorReplies = Counter.builder("delayq.redis.errors").description("Redis calls that failed, by kind")
                .tag("kind", "reply").register(registry);
    }

    /** False from a call that found Redis unreachable (or not ready) until one succeeds again. */
    public boolean answering() {
        return answering;
    }

    public Response send(Request request) {
        return await(redis.send(request));
    }

    /** Pipelined requests on one connection: one round trip. */
    public List<Response> batch(List<Request> requests) {
        return await(redis.batch(requests));
    }

    /** A dedicated connection (pub/sub); the caller closes it. */
    public RedisConnection connect() {
        return await(redis.connect());
    }

    private <T> T await(Future<T> future) {
        try {
            T reply = future.toCompletionStage().toCompletableFuture().get(timeoutMs, TimeUnit.MILLISECONDS);
            answering = true;
            return reply;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException("interrupted while waiting for Redis", e);
        } catch (TimeoutException e) {
            throw counted(new StoreUnavailableException("Redis did not answer within " + timeoutMs + " ms", e));
        } catch (ExecutionException e) {
            throw counted(translate(e.getCause()));
        }
    }

    private RuntimeException counted(RuntimeException e) {
        if (e instanceof StoreUnavailableException) {
            answering = false;
            unavailable.increment();
        } else if (!isProtocol(e.getMessage())) {
            answering = true;
            errorReplies.increment();
        } else {
            answering = true;
        }
        return e;
    }

    /** Replies that are part of the protocol with the scripts, not errors: a missing day shard, a script to load. */
    private static boolean isProtocol(String message) {
        return message != null && (message.contains("DQNEEDDAY") || message.startsWith("NOSCRIPT"));
    }

    static RuntimeException translate(Throwable cause) {
        if (cause instanceof ErrorType error) {
            String message = String.valueOf(error.getMessage());
            for (String kind : TRANSIENT) {
                if (message.startsWith(kind)) {
                    return new StoreUnavailableException("Redis is not ready: " + message, error);
                }
            }
            return new RedisReplyException(message, error);
        }
        return new StoreUnavailableException("Redis is unreachable: " + cause, cause);
    }
}
