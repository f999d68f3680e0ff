package io.delayq.dispatch;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.jboss.logging.Logger;

import io.delayq.store.RedisGateway;
import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;

/**
 * Listens on the wake-up channels of the served partitions: when a job becomes the earliest of a
 * partition (enqueue, retry, drain), the script that scheduled it publishes its runAt, and the
 * partition's taker here cuts its sleep short. One dedicated connection; when it drops it is
 * re-established and every taker is woken once, since messages may have been missed meanwhile.
 * On a Redis Cluster the channels are sharded (Redis 7 {@code SSUBSCRIBE}): each subscription
 * goes to the master of its partition's slot, and a message never leaves that shard; when any of
 * those connections ends (a failover) all are made again against the current slot map.
 */
final class WakeUps {
    private static final Logger LOG = Logger.getLogger(WakeUps.class);
    private final RedisGateway redis;
    private final Map<String, DueTaker> byChannel;
    private volatile boolean running;
    private volatile Thread thread;
    private volatile RedisConnection connection;
    private volatile boolean subscribed;
    /** Counted down when the current subscription's connection must be given up. */
    private volatile CountDownLatch closed;

    WakeUps(RedisGateway redis, Map<String, DueTaker> byChannel) {
        this.redis = redis;
        this.byChannel = byChannel;
    }

    void start() {
        if (byChannel.isEmpty()) {
            return;
        }
        running = true;
        thread = Thread.ofPlatform().name("delayq-wakeups").daemon().start(this::loop);
    }

    void stop() {
        running = false;
        RedisConnection c = connection;
        if (c != null) {
            c.close();
        }
        Thread t = thread;
        if (t != null) {
            t.interrupt();
        }
    }

    /** Whether the subscription is currently established. */
    boolean subscribed() {
        return subscribed;
    }

    private void loop() {
        boolean first = true;
        while (running) {
            CountDownLatch closed = new CountDownLatch(1);
            this.closed = closed;
            try {
                RedisConnection c = redis.connect();
                connection = c;
                c.handler(this::onMessage);
                c.exceptionHandler(e -> closed.countDown());
                c.endHandler(v -> closed.countDown());
                if (redis.cluster()) {
                    // One SSUBSCRIBE per channel: the client routes each to its slot's master.
                    List<Future<Response>> sent = new ArrayList<>();
                    byChannel.keySet().forEach(ch -> sent.add(c.send(Request.cmd(Command.SSUBSCRIBE).arg(ch))));
                    Future.all(sent).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
                } else {
                    Request subscribe = Request.cmd(Command.SUBSCRIBE);
                    byChannel.keySet().forEach(subscribe::arg);
                    c.send(subscribe).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
                }
                subscribed = true;
                if (!first) {
                    LOG.info("wake-up subscription re-established; waking every taker once");
                    byChannel.values().forEach(t -> t.wake(Long.MIN_VALUE));
                }
                first = false;
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                if (running) {
                    LOG.debugf("wake-up subscription failed: %s", e.toString());
                }
            } finally {
                subscribed = false;
                RedisConnection c = connection;
                connection = null;
                if (c != null) {
                    try {
                        c.close();
                    } catch (RuntimeException ignored) {
                        // already closed
                    }
                }
            }
            if (running) {
                first = false;
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    private void onMessage(Response r) {
        if (r != null && r.type() == ResponseType.ERROR) {
            // A subscription refused (on a cluster: MOVED, the slot map was stale): give up this
            // connection and subscribe everything again, against a fresher slot map.
            CountDownLatch c = closed;
            if (running && c != null) {
                LOG.debugf("wake-up subscription refused: %s; subscribing again", r);
                c.countDown();
            }
            return;
        }
        // RESP2 and RESP3 both deliver ["message", channel, payload] ("smessage" when sharded).
        if (r == null || r.size() < 3) {
            return;
        }
        String kind = r.get(0).toString();
        if ("sunsubscribe".equals(kind)) {
            // A sharded channel's slot moved to another node (resharding, failover): Redis dropped
            // the subscription. Subscribe everything again where the slots are now.
            CountDownLatch c = closed;
            if (running && c != null) {
                LOG.infof("wake-up channel %s moved to another Redis node; subscribing again", r.get(1));
                c.countDown(); // the loop closes the connection and subscribes again
            }
            return;
        }
        if (!"message".equals(kind) && !"smessage".equals(kind)) {
            return;
        }
        DueTaker taker = byChannel.get(r.get(1).toString());
        if (taker != null) {
            try {
                taker.wake(Long.parseLong(r.get(2).toString()));
            } catch (NumberFormatException e) {
                LOG.debugf("ignored wake-up message %s", r);
            }
        }
    }
}
