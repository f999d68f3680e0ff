package io.delayq.security;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.ObservesAsync;

import org.jboss.logging.Logger;

import io.delayq.core.DelayqConfig;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.util.concurrent.ScheduledFuture;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.quarkus.vertx.http.HttpServerStart;
import io.quarkus.vertx.http.HttpsServerStart;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.impl.HttpServerImpl;
import io.vertx.core.impl.VertxInternal;
import io.vertx.core.net.impl.ConnectionBase;
import io.vertx.core.net.impl.TCPServerBase;

/**
 * {@code delayq.http.header-timeout}: an HTTP/1.x request whose headers have not all arrived that
 * long after its first byte is answered 408 and its connection closed. Quarkus bounds the header
 * phase only by idle time, so a client sending one header byte every few seconds could hold a
 * connection for hours; this is a deadline, however steadily the bytes come.
 * <p>
 * Neither Quarkus nor Vert.x offers a hook before a request's headers are parsed (Quarkus sets
 * Vert.x's connection handler only for {@code quarkus.http.limits.max-connections}), so this works
 * one level down, in Netty: once an HTTP server listens, a handler in front of its accepting
 * channel puts a {@link Clock} first in each new connection's pipeline. The clock starts at the
 * first byte a connection sends while no request of it is under way, and stops when the request
 * reaches the router ({@link #requestStarted}, called by {@link RequestDeadline}'s first route);
 * it starts again with the first byte after that request and its answer have both ended. The
 * accepting channel is found through Vert.x's own server registry; its field is read by reflection
 * (registered for native images by the annotation below). When either is missing the deadline is
 * not installed and a WARN says so: the idle timeout remains.
 */
@ApplicationScoped
@RegisterForReflection(targets = TCPServerBase.class, fields = true, methods = false)
public class HeaderDeadline {
    private static final Logger LOG = Logger.getLogger(HeaderDeadline.class);
    static final String NAME = "delayq-header-deadline";

    private final long timeoutMs;

    HeaderDeadline(DelayqConfig config) {
        java.time.Duration timeout = config.http().headerTimeout();
        this.timeoutMs = timeout.isZero() || timeout.isNegative() ? 0 : Math.max(1, timeout.toMillis());
    }

    void onHttp(@ObservesAsync HttpServerStart start, Vertx vertx) {
        install(vertx);
    }

    void onHttps(@ObservesAsync HttpsServerStart start, Vertx vertx) {
        install(vertx);
    }

    private void install(Vertx vertx) {
        if (timeoutMs == 0) {
            return;
        }
        List<Channel> channels = new ArrayList<>();
        try {
            Field bound = TCPServerBase.class.getDeclaredField("bindFuture");
            bound.setAccessible(true);
            var servers = ((VertxInternal) vertx).sharedHttpServers();
            synchronized (servers) {
                for (HttpServerImpl server : servers.values()) {
                    if (bound.get(server) instanceof io.vertx.core.Future<?> f && f.result() instanceof Channel ch) {
                        channels.add(ch);
                    }
                }
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warnf("delayq.http.header-timeout is not applied (%s): the header phase of a request is bounded by"
                    + " quarkus.http.idle-timeout only", e);
            return;
        }
        for (Channel ch : channels) {
            ch.eventLoop().execute(() -> {
                if (ch.isOpen() && ch.pipeline().get(NAME) == null) {
                    ch.pipeline().addFirst(NAME, new Acceptor(timeoutMs));
                    LOG.debugf("header deadline of %d ms on %s", timeoutMs, ch.localAddress());
                }
            });
        }
    }

    /**
     * The request's headers have arrived (it reached the router): its connection's clock stops
     * until both the request and its answer have ended.
     */
    static void requestStarted(HttpServerRequest request, io.vertx.ext.web.RoutingContext rc) {
        if (request.version() == HttpVersion.HTTP_2 || !(request.connection() instanceof ConnectionBase connection)) {
            return;
        }
        Channel ch = connection.channel();
        if (ch.pipeline().get(NAME) instanceof Clock clock) {
            onLoop(ch, () -> clock.started(request));
            rc.addEndHandler(v -> onLoop(ch, clock::answered));
        }
    }

    private static void onLoop(Channel ch, Runnable task) {
        if (ch.eventLoop().inEventLoop()) {
            task.run();
        } else {
            ch.eventLoop().execute(task);
        }
    }

    /** First in the accepting channel's pipeline: puts a clock in front of each accepted connection. */
    @ChannelHandler.Sharable
    static final class Acceptor extends ChannelInboundHandlerAdapter {
        private final long timeoutMs;

        Acceptor(long timeoutMs) {
            this.timeoutMs = timeoutMs;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Channel child) {
                child.pipeline().addFirst(NAME, new Clock(timeoutMs));
            }
            ctx.fireChannelRead(msg);
        }
    }

    /**
     * One per connection, before TLS and HTTP decoding: it sees the raw bytes. All of its state is
     * touched on the connection's event loop only.
     */
    static final class Clock extends ChannelInboundHandlerAdapter {
        private final long timeoutMs;
        /** The request under way (headers arrived), until it and its answer have ended; null between requests. */
        private HttpServerRequest current;
        private boolean answered;
        /** Counts the clock's starts; a check that finds another start than its own does nothing. */
        private long generation;
        private boolean running;
        private ScheduledFuture<?> check;

        Clock(long timeoutMs) {
            this.timeoutMs = timeoutMs;
        }

        void started(HttpServerRequest request) {
            current = request;
            answered = false;
            stop();
        }

        void answered() {
            answered = true;
        }

        private void stop() {
            running = false;
            generation++;
            if (check != null) {
                check.cancel(false);
                check = null;
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (current != null && answered && current.isEnded()) {
                current = null;
            }
            if (current == null && !running) {
                running = true;
                long mine = ++generation;
                check = ctx.executor().schedule(() -> expire(ctx, mine), timeoutMs, TimeUnit.MILLISECONDS);
            }
            ctx.fireChannelRead(msg);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            stop();
            ctx.fireChannelInactive();
        }

        private void expire(ChannelHandlerContext ctx, long mine) {
            if (!running || generation != mine || current != null || !ctx.channel().isOpen()) {
                return;
            }
            ChannelPipeline pipeline = ctx.pipeline();
            ChannelHandlerContext encoder = pipeline.context("httpEncoder");
            if (pipeline.get("httpDecoder") == null || encoder == null) {
                // HTTP/2, or a TLS handshake not finished: Vert.x's own limits apply to those.
                running = false;
                return;
            }
            LOG.debugf("headers from %s not complete %d ms after their first byte; 408 and closed",
                    ctx.channel().remoteAddress(), timeoutMs);
            byte[] body = ("{\"type\":\"about:blank\",\"title\":\"Request Timeout\",\"status\":408,\"detail\":\"the request's"
                    + " headers did not arrive within delayq.http.header-timeout (" + timeoutMs + " ms)\"}")
                    .getBytes(StandardCharsets.UTF_8);
            byte[] head = ("HTTP/1.1 408 Request Timeout\r\nContent-Type: application/problem+json\r\nContent-Length: "
                    + body.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
            // From the encoder's place: on through TLS (when there is) to the socket, past the encoder itself.
            encoder.writeAndFlush(Unpooled.wrappedBuffer(head, body)).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
