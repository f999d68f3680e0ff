package io.delayq.store;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.jboss.logging.Logger;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * Keeps a topic with jobs in the topics SET ({@link Keys#topics()}), at the least cost per
 * enqueue: this replica's own topics ({@link OwnTopics}) are trusted listed for a while once it
 * listed them; any other topic is listed beside every enqueue. Shared by the parts through
 * {@link StoreLayer}: the enqueue lists, a forget drops what this replica believed.
 */
final class TopicListing {
    private static final Logger LOG = Logger.getLogger(TopicListing.class);
    private final RedisGateway redis;
    private final Keys keys;
    /**
     * When (monotonic ns) each of this replica's own topics was last written to the topics SET:
     * its enqueues skip the SADD for {@link #LISTED_TRUST_NANOS} after. Other topics are not
     * remembered (any name can come in a request): their enqueues send the SADD with the script.
     */
    private final Map<String, Long> listedAt = new ConcurrentHashMap<>();
    private final OwnTopics remembered;
    /**
     * How long a replica trusts that a topic it listed is still listed: a topic forgotten meanwhile
     * is listed again by its first enqueue, which finds the partition's "forgotten" mark, kept
     * twice as long ({@link #FORGOTTEN_MARK_MS}).
     */
    private static final long LISTED_TRUST_NANOS = 3_600_000_000_000L;
    static final long FORGOTTEN_MARK_MS = 2 * 3_600_000L;

    TopicListing(RedisGateway redis, Keys keys, OwnTopics remembered) {
        this.redis = redis;
        this.keys = keys;
        this.remembered = remembered;
    }

    /**
     * Runs an enqueue with its topic in the topics SET. A topic of this replica's own that it
     * listed lately goes straight to the script; one not listed lately is listed first (so that a
     * listed topic may be empty, but a job never belongs to an unlisted one). Any other topic is
     * listed by every enqueue, its SADD sent beside the script rather than before it: no round
     * trip more, and nothing remembered per name. (dq:topics is not under the partition's hash
     * tag, so it cannot be in the script.)
     */
    Future<Response> listed(String topic, java.util.function.Supplier<Future<Response>> script) {
        if (!remembered.contains(topic)) {
            Future<Response> listing = sadd(topic);
            // Once the script stored the jobs, a failed SADD (on a cluster, dq:topics' master may be
            // the one that hangs) must not fail the enqueue: it is sent again until it lands.
            return script.get().onSuccess(r -> listing.onFailure(e -> listLater(topic)));
        }
        Long at = listedAt.get(topic);
        if (at != null && System.nanoTime() - at < LISTED_TRUST_NANOS) {
            return script.get();
        }
        long asked = System.nanoTime();
        return sadd(topic).transform(done -> {
            if (done.succeeded()) {
                listedAt.put(topic, asked);
                return script.get();
            }
            if (at != null) {
                // Listed by this replica before (a forget since is caught by the partition's mark
                // inside the script): enqueue, and list again until it lands.
                listLater(topic);
                return script.get();
            }
            // Never listed here: the script is not sent, its jobs are not stored.
            return StoreUnavailableException.notSent(done.cause());
        });
    }

    /** Topics whose listing SADD failed after their jobs were stored; sent again until it lands. */
    private final Set<String> toList = ConcurrentHashMap.newKeySet();

    private void listLater(String topic) {
        if (toList.size() >= 1000 || !toList.add(topic)) {
            return;
        }
        Thread.ofVirtual().name("delayq-list-topic").start(() -> {
            try {
                for (int i = 0; i < 600; i++) {
                    try {
                        redis.await(sadd(topic));
                        LOG.debugf("topic %s listed again", topic);
                        return;
                    } catch (RuntimeException e) {
                        Thread.sleep(1000);
                    }
                }
                LOG.warnf("topic %s could not be listed in %s for 10 minutes: it has jobs but GET /topics may not show it",
                        topic, keys.topics());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                toList.remove(topic);
            }
        });
    }

    /**
     * After an enqueue that found its topic forgotten since the partition emptied (its reply ends
     * with "relist", see forget.lua): lists the topic again before the caller answers, whatever
     * this replica believed.
     */
    Future<Response> relistIfForgotten(String topic, Response reply) {
        if (reply.size() == 0 || !"relist".equals(reply.get(reply.size() - 1).toString())) {
            return Future.succeededFuture(reply);
        }
        listedAt.remove(topic);
        long asked = System.nanoTime();
        return sadd(topic).map(v -> {
            if (remembered.contains(topic)) {
                listedAt.put(topic, asked);
            }
            return reply;
        });
    }

    /** Forgets that this replica listed the topic (a forget took it out of the topics SET). */
    void forgotten(String topic) {
        listedAt.remove(topic);
    }

    Future<Response> sadd(String topic) {
        return redis.sendAsync(Request.cmd(Command.SADD).arg(keys.topics()).arg(topic));
    }
}
