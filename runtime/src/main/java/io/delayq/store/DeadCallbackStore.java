package io.delayq.store;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/**
 * Dead-job callbacks: recorded by a burial in the same script (fail, reclaim), claimed here by
 * the sender of any replica, settled as sent, to retry, or failed for good; the failed ones are
 * kept, the newest, for the dashboard.
 */
@Singleton
public class DeadCallbackStore extends StorePart {
    @Inject
    public DeadCallbackStore(StoreLayer layer) {
        super(layer);
    }

    /** Who to tell when a burial here recorded a dead-job callback (the callback sender). */
    public void onCallbackRecorded(Consumer<Partition> listener) {
        layer.onCallbackRecorded(listener);
    }

    /** A dead-job callback read from Redis (see {@link Keys#callbackData}). */
    public record DeadCallback(Partition partition, String member, String id, long diedAt, int tries, String lastError,
            JobRecord record) {
        /** Reads a callback from its member and its {@link Keys#callbackData} value. */
        public static DeadCallback parse(Partition p, String member, String data) {
            int c1 = data.indexOf(','), c2 = data.indexOf(',', c1 + 1), nl = data.indexOf('\n', c2 + 1);
            return new DeadCallback(p, member, member.substring(member.indexOf(':') + 1),
                    Long.parseLong(data.substring(c1 + 1, c2)), Integer.parseInt(data.substring(0, c1)),
                    data.substring(c2 + 1, nl), JobRecord.decode(data.substring(nl + 1)));
        }
    }

    /**
     * Claims up to {@code limit} due dead-job callbacks of a partition for {@code claimMs} (their
     * tries counted); another replica takes them again after that unless they are settled.
     */
    public Future<List<DeadCallback>> takeCallbacksAsync(Partition p, int limit, long claimMs) {
        return runAsync("cbtake", p, Set.of(), List.of(Integer.toString(limit), Long.toString(claimMs)), 0, null)
                .map(r -> {
                    List<DeadCallback> out = new ArrayList<>(r.size() / 2);
                    for (int i = 0; i + 1 < r.size(); i += 2) {
                        out.add(DeadCallback.parse(p, r.get(i).toString(), r.get(i + 1).toString()));
                    }
                    return out;
                });
    }

    /**
     * When the partition's earliest dead-job callback is due (epoch ms by Redis' clock), -1 when it
     * has none: one plain read, so that a poll of a partition without due callbacks costs one command.
     */
    public Future<Long> nextCallbackAsync(Partition p) {
        return ensureLayoutAsync().compose(v -> redis.sendAsync(
                Request.cmd(Command.ZRANGE).arg(keys.callbacks(p)).arg(0).arg(0).arg("WITHSCORES")))
                .map(r -> {
                    if (r == null || r.size() == 0) {
                        return -1L;
                    }
                    // RESP2 answers [member, score]; RESP3 [[member, score]].
                    Response score = r.get(0).type() == io.vertx.redis.client.ResponseType.MULTI ? r.get(0).get(1) : r.get(1);
                    return (long) Double.parseDouble(score.toString());
                });
    }

    /**
     * The earliest callback of each (callbacks, cbnext) pair of keys, setting a missing cbnext on
     * the way: for the first look after a start, at a store whose callbacks were recorded before
     * cbnext was kept.
     */
    private static final String CALLBACK_HEADS_HEAL = "local o = {} for i = 1, #KEYS, 2 do "
            + "local r = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES') "
            + "if r[2] and redis.call('EXISTS', KEYS[i + 1]) == 0 then redis.call('SET', KEYS[i + 1], r[2]) end "
            + "o[#o + 1] = r[2] or '-1' end return o";

    /**
     * {@link #nextCallbackAsync} of each partition, read from the cbnext keys the scripts keep: on
     * a single Redis one MGET for them all, on a cluster one GET per partition (their keys are in
     * other slots). With {@code firstLook} (this replica has not looked at these partitions since
     * it started) the callbacks themselves are read once, and a missing cbnext is set from them.
     */
    public List<Future<Long>> nextCallbacksAsync(List<Partition> ps, boolean firstLook) {
        List<Future<Long>> out = new ArrayList<>(ps.size());
        if (cluster || ps.size() < 2) {
            for (Partition p : ps) {
                out.add(ensureLayoutAsync().compose(v -> redis.sendAsync(firstLook
                        ? Request.cmd(Command.EVAL).arg(CALLBACK_HEADS_HEAL).arg(2).arg(keys.callbacks(p)).arg(keys.callbackNext(p))
                        : Request.cmd(Command.GET).arg(keys.callbackNext(p))))
                        .map(r -> firstLook ? head(r.get(0)) : head(r)));
            }
            return out;
        }
        Future<Response> all = ensureLayoutAsync().compose(v -> {
            Request read;
            if (firstLook) {
                read = Request.cmd(Command.EVAL).arg(CALLBACK_HEADS_HEAL).arg(2 * ps.size());
                ps.forEach(p -> read.arg(keys.callbacks(p)).arg(keys.callbackNext(p)));
            } else {
                read = Request.cmd(Command.MGET);
                ps.forEach(p -> read.arg(keys.callbackNext(p)));
            }
            return redis.sendAsync(read);
        });
        for (int i = 0; i < ps.size(); i++) {
            int at = i;
            out.add(all.map(r -> head(r.get(at))));
        }
        return out;
    }

    /** A head as read: a number of ms, or none (-1). */
    private static long head(Response r) {
        return r == null ? -1L : (long) Double.parseDouble(r.toString());
    }

    /** How one try of a callback ended. */
    public enum CallbackOutcome {
        DONE("done"), RETRY("retry"), FAILED("failed");

        final String arg;

        CallbackOutcome(String arg) {
            this.arg = arg;
        }
    }

    /**
     * Settles a claimed callback; false when it was no longer pending (settled by another replica)
     * or, for a retry or a failure, no longer this claim's ({@link DeadCallback#tries} is the claim's
     * token: a claim that expired and was taken again by another replica changes nothing but "done").
     */
    public Future<Boolean> settleCallbackAsync(DeadCallback c, CallbackOutcome outcome, long delayMs, String error) {
        return runAsync("cbsettle", c.partition(), Set.of(), List.of(c.member(), outcome.arg, Long.toString(delayMs),
                oneLine(error), Integer.toString(c.tries()), Integer.toString(layer.deadKeep(c.partition().topic())),
                Long.toString(layer.deadMaxAgeMs(c.partition().topic()))), 0, null)
                .map(r -> r.toInteger() == 1);
    }

    /** Callbacks of the topic that failed for good, newest first, at most {@code limit} per partition. */
    public List<DeadCallback> failedCallbacks(String topic, int limit) {
        List<DeadCallback> out = new ArrayList<>();
        for (Partition p : partitionsOf(topic)) {
            Response members = redis.send(
                    Request.cmd(Command.ZREVRANGE).arg(keys.callbacksFailed(p)).arg(0).arg(limit - 1));
            if (members == null || members.size() == 0) {
                continue;
            }
            Request hmget = Request.cmd(Command.HMGET).arg(keys.callbackData(p));
            members.forEach(m -> hmget.arg(m.toString()));
            Response data = redis.send(hmget);
            for (int i = 0; i < members.size(); i++) {
                if (data.get(i) != null) {
                    out.add(DeadCallback.parse(p, members.get(i).toString(), data.get(i).toString()));
                }
            }
        }
        out.sort((a, b) -> Long.compare(b.diedAt(), a.diedAt()));
        return out;
    }
}
