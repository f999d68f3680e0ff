package io.delayq.store;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import jakarta.enterprise.context.ApplicationScoped;

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

    public RedisGateway(Redis redis, DelayqConfig config) {
        this.redis = redis;
        this.timeoutMs = config.redisTimeout().toMillis();
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
            return future.toCompletionStage().toCompletableFuture().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException("interrupted while waiting for Redis", e);
        } catch (TimeoutException e) {
            throw new StoreUnavailableException("Redis did not answer within " + timeoutMs + " ms", e);
        } catch (ExecutionException e) {
            throw translate(e.getCause());
        }
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
