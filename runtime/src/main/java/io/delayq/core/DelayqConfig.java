package io.delayq.core;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;

import io.quarkus.runtime.annotations.ConfigPhase;
import io.quarkus.runtime.annotations.ConfigRoot;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;

/**
 * All delayq settings, under the prefix {@code delayq}. Every time is a {@link Duration}
 * ({@code 30s}, {@code 5m}, {@code PT1H}); every default is written next to its property.
 */
@ConfigMapping(prefix = "delayq")
@ConfigRoot(phase = ConfigPhase.RUN_TIME)
public interface DelayqConfig {

    /**
     * Prefix of every Redis key delayq writes. Default {@code dq}.
     */
    @WithDefault("dq")
    String prefix();

    /**
     * Number of partitions per topic. Each partition is its own set of keys under its own
     * Redis Cluster hash tag, so a busy topic spreads over a cluster. Default 1. Changing it
     * on a live system strands the jobs of the partitions that disappear.
     */
    @WithDefault("1")
    int partitions();

    /**
     * How far in the future a job may be scheduled. Default 365 days.
     */
    @WithDefault("365d")
    Duration horizon();

    /**
     * Timeout of one Redis call; past it the call fails as "Redis unavailable" (HTTP 503).
     * Default 5 s.
     */
    @WithName("redis-timeout")
    @WithDefault("5s")
    Duration redisTimeout();

    /**
     * What an enqueue through {@code Jobs} or {@code ReactiveJobs} made inside an active JTA
     * transaction does (see docs/transactions.md): {@code after-commit} sends it when the
     * transaction commits and drops it when it rolls back (a send failing after the commit is
     * retried for 30 s, then logged and counted: not lossless); {@code outbox} writes it as a row of
     * the service's database in that transaction, relayed to Redis once committed (needs the
     * {@code io.delayq:quarkus-delayq-outbox} extension); {@code ignore} sends it at once. Unset:
     * {@code after-commit} when the service has a transaction manager (quarkus-narayana-jta);
     * without one there is no transaction to follow.
     */
    Optional<TransactionMode> transactions();

    /** REST API settings. */
    Api api();

    /** What delayq's REST API and dashboard accept of an HTTP request (its Host). */
    Endpoints http();

    /** Taking and running due jobs. */
    Dispatch dispatch();

    /** Retry policy applied to failed attempts, unless a topic overrides it. */
    Retry retry();

    /** Graceful shutdown. */
    Drain drain();

    /** How far an enqueue's write must have travelled before it is acknowledged. */
    Durability durability();

    /**
     * How long a topic with no jobs that no replica serves stays known: past it, it is forgotten
     * by itself, as by {@code DELETE /topics/<t>} — gone from {@code GET /topics} and the
     * dashboard, its pause, rate limit and tick records deleted (a new job lists it again). Counted
     * from the last time a live replica announced serving it, or a replica found it holding jobs
     * or remembered dedup ids (a live replica records the topics it serves every 10 minutes);
     * replicas look at one topic a minute each, in turn (not at the topics they serve, with 10
     * minutes between two rounds), so a topic may stay a while longer. Default 7 days.
     */
    @WithName("topics-retention")
    @WithDefault("7d")
    Duration topicsRetention();

    /** Delivery of dead-job callbacks ({@code delayq.topics.<t>.dead-url}). */
    Callbacks callbacks();

    /**
     * How much of the dead set Redis keeps, for every topic (each can override it:
     * {@code delayq.topics.<t>.dead.max-jobs}, {@code .dead.max-age}). A dead job keeps its
     * payload: size Redis for max-jobs × topics × payload size.
     */
    Dead dead();

    /**
     * How many succeeded jobs a topic with {@code delayq.topics.<t>.result-retention} keeps
     * readable, with their results.
     */
    Results results();

    /**
     * The per-minute history of the jobs (enqueued, succeeded, failed, lateness p99 per topic and
     * in total) behind {@code GET /history}, {@code GET /topics/<t>/history} and the dashboard's
     * charts: counted in memory and added to Redis every {@code flush-interval}.
     */
    History history();

    /** Per-topic settings, by topic name: {@code delayq.topics."order-close".concurrency=8}. */
    Map<String, Topic> topics();

    /**
     * Recurring schedules, by name: {@code delayq.schedules.nightly-report.cron=0 0 2 * * ?} with
     * {@code .topic=report}. Every replica that declares one fires its ticks; each tick becomes
     * one job of the topic, id {@code <name>:<tick epoch ms>}, however many replicas run.
     */
    Map<String, Schedule> schedules();

    interface Schedule {
        /**
         * When it fires, as a Quartz cron expression with seconds, as Quarkus Scheduler takes it
         * ({@code 0 0/15 * * * ?}: every 15 minutes). Give either this or {@code every}.
         */
        Optional<String> cron();

        /**
         * Or a fixed period ({@code 30s}, {@code 1h}, at least 1 s), counted from the Unix epoch:
         * {@code 15m} fires at :00, :15, :30 and :45 UTC, on every replica alike.
         */
        Optional<Duration> every();

        /** The topic each tick's job is enqueued on. */
        String topic();

        /** The payload of each tick's job, as JSON text. Default: none. */
        Optional<String> payload();

        /**
         * The time zone a cron expression is read in ({@code Europe/Berlin}); daylight-saving
         * changes behave as in Quarkus Scheduler. Default {@code UTC}. Cron schedules only.
         */
        Optional<String> timeZone();

        /**
         * Ticks that passed while no replica could fire them (every replica down, or Redis away):
         * {@code fire-once} (the default) fires the latest of them once, at once; {@code skip}
         * fires none and waits for the next tick.
         */
        @WithDefault("fire-once")
        String misfire();

        /**
         * {@code allow} (the default): every tick fires, even while the previous tick's job still
         * runs; {@code skip}: a tick is skipped while the previous tick's job is scheduled or
         * running (a dead one does not hold it back).
         */
        @WithDefault("allow")
        String overlap();

        /** No tick before this instant (ISO-8601, {@code 2027-01-01T00:00:00Z}). Default: none. */
        Optional<String> start();

        /** No tick after this instant (ISO-8601), which is after {@code start}. Default: none. */
        Optional<String> end();
    }

    interface Api {
        /**
         * An operator credential: a request with {@code Authorization: Bearer <token>} holds the
         * role {@code delayq-operator} and may call every delayq endpoint. Other credentials come
         * from the service's Quarkus Security setup (embedded users, OIDC, ...). Unset (the
         * default) with no other credential configured leaves delayq's endpoints open, and a
         * production start logs a warning saying so.
         */
        Optional<String> token();

        /**
         * Largest accepted payload, in bytes of its JSON as sent (UTF-8). Larger payloads get 413.
         * Default 65536 (64 KiB).
         */
        @WithDefault("65536")
        int maxPayloadBytes();

        /**
         * Most jobs in one {@code POST /jobs/batch}. Default 1000.
         */
        @WithDefault("1000")
        int maxBatch();
    }

    interface Endpoints {
        /**
         * Host names delayq's REST API and dashboard answer to, as the request's {@code Host} says
         * (the port is not compared): a name, {@code .example.com} for that domain and its
         * subdomains, or {@code *} for any. A request for another name gets 403: a web page that
         * made its own name point at this server (DNS rebinding) cannot read or act through the
         * visitor's browser. IP addresses are always accepted (no page can rebind one). Unset
         * (the default): {@code localhost}, its subdomains, and the host of {@code quarkus.http.host},
         * checked only while delayq's endpoints are open (no credential configured: a rebinding
         * page has none to send); set, checked always.
         */
        Optional<java.util.List<String>> allowedHosts();

        /**
         * Longest time a request's body may take to arrive after its headers (the whole service's
         * requests): past it the request is answered 408 and its connection closed, so a client
         * that sends slowly or stops cannot hold a connection and its buffered bytes. The header
         * phase has its own limit, {@code delayq.http.header-timeout}. 0 turns it off. Default 60 s
         * (a maximum-size batch then needs about 1.2 MB/s).
         */
        @WithDefault("60s")
        Duration readTimeout();

        /**
         * Longest time an HTTP/1.x request's headers may take to arrive, from its first byte (the
         * whole service's requests, on every HTTP server of the application): past it the request
         * is answered 408 and its connection closed, however steadily its bytes trickle in. A
         * connection idle between requests is not affected (that is {@code quarkus.http.idle-timeout}).
         * HTTP/2 connections and TLS handshakes keep their own limits. 0 turns it off. Default 20 s.
         */
        @WithDefault("20s")
        Duration headerTimeout();

        /**
         * Most bytes of request bodies of delayq's API read and parsed at once, over all requests
         * (a body is held several times over while it is parsed). A request whose
         * {@code Content-Length} would go over it is answered 503 with {@code Retry-After} before
         * its body is read; one body is always admitted alone. Unset (the default): an eighth of
         * the heap ({@code -Xmx}).
         */
        java.util.OptionalLong maxBodyBytesInFlight();
    }

    interface Dispatch {
        /**
         * Whether this replica takes and runs due jobs at all (a producer-only replica sets it
         * to false). Default true.
         */
        @WithDefault("true")
        boolean enabled();

        /**
         * Jobs of one topic running at once on this replica, unless the topic sets its own.
         * The taker never leases more jobs than there are free slots. Default 64.
         */
        @WithDefault("64")
        int concurrency();

        /**
         * How long a taken job is leased to this replica before another may retake it. The
         * heartbeat extends it while the observer runs. Default 30 s.
         */
        @WithDefault("30s")
        Duration lease();

        /**
         * How often the leases of running jobs are extended. Must be well below {@link #lease()}.
         * Default 10 s.
         */
        @WithDefault("10s")
        Duration heartbeat();

        /**
         * Safety-net poll: the replica reads the earliest due time of every served partition this
         * often, plus 25–75 % random jitter (one MGET; 1.25–1.75 s apart by default), in case a
         * wake-up message was missed. Default 1 s.
         */
        @WithDefault("1s")
        Duration safetyNet();

        /**
         * Shortest time between two take calls of a taker while jobs keep falling due: batches a
         * steady stream into fewer, larger takes (and acks) for at most this much added lateness.
         * A take that came back full is followed at once. {@code 0ms} takes as soon as anything is
         * due. Default 2 ms (measured on 2 cores at 5,000 jobs/s: against 1 ms, 35 % fewer script
         * calls and less Redis CPU, with the same p99 lateness: less CPU contention).
         */
        @WithDefault("2ms")
        Duration takeGap();

        /**
         * How often each replica looks for expired leases (one served partition per look, in
         * turn): a backstop. The safety-net poll reads every served partition's earliest lease
         * deadline with its due times and reclaims a partition with an expired lease at once, so
         * a killed replica's jobs run again within lease + about a poll. Default 60 s (an idle
         * replica's look costs Redis a command per look).
         */
        @WithDefault("60s")
        Duration reclaimInterval();

        /**
         * Longest run of one attempt. Past it the attempt is ended: a synchronous observer's
         * thread is interrupted, a reactive one's (or an HTTP call's) CompletionStage is
         * cancelled, and such an attempt fails at once (and is retried with backoff, or dies after
         * its last attempt). An {@code @ObservesAsync} observer, which no cancel stops, keeps its
         * slot and lease until it ends, as a synchronous one does. A synchronous observer keeps its worker slot and its lease
         * (extended by the heartbeat) until it actually returns, so its job is never run again on
         * this replica meanwhile; only then is the attempt failed as timed out. One that ignores
         * interruption therefore keeps its thread, but such threads are bounded by the topic's
         * concurrency (each holds a slot), counted by the gauge {@code delayq.attempts.overdue}
         * and named in a WARN line when they pass the timeout and when they return. Without a
         * timeout a hung observer would hold its job, extended by the heartbeat, forever.
         * Per topic: {@code delayq.topics.<t>.attempt-timeout}. Default 10 min.
         */
        @WithDefault("10m")
        Duration attemptTimeout();

        /**
         * Lost attempts in a row (a lease that expired without its holder reporting an outcome:
         * a crash, a partition, a freeze) after which the job goes to the dead set. Lost attempts
         * are counted apart from attempts ({@code lostAttempts}) and do not use up max attempts;
         * each waits the retry backoff of its number before the job is due again. A reported
         * failure ends the run (the count starts again from 0); a snooze does not, since it costs
         * no attempt. A value below 1 counts as 1. Default 3.
         */
        @WithDefault("3")
        int maxLostAttempts();
    }

    interface Retry {
        /** Delay before the second attempt. Default 1 s. */
        @WithDefault("1s")
        Duration initial();

        /** Factor applied to the delay after each further failure. Default 2.0. */
        @WithDefault("2.0")
        double multiplier();

        /** Upper bound of the delay between attempts. Default 10 min. */
        @WithDefault("10m")
        Duration max();

        /**
         * Fraction of each delay that is random (0 = none, 1 = anywhere between 0 and the
         * delay), so that jobs failing together do not retry together. Default 0.2.
         */
        @WithDefault("0.2")
        double jitter();

        /** Attempts before a job goes to the dead set, unless the job or topic says. Default 10. */
        @WithDefault("10")
        int maxAttempts();
    }

    interface Durability {
        /**
         * Number of Redis replicas an enqueue's write must reach before the enqueue replies
         * (Redis {@code WAIT}). 0 (the default) replies once the master has the job: a job accepted
         * in the moment before a master fails over (or a Redis without {@code appendfsync always}
         * crashes) can be lost. With N &gt; 0 a failover to a replica that acknowledged keeps every
         * accepted job; an enqueue that does not reach N replicas within {@code timeout} fails with
         * 503 (the job may still exist on the master: retry it with the same id).
         */
        @WithDefault("0")
        int replicas();

        /** Longest wait for the replicas of {@code replicas}. Default 1 s. */
        @WithDefault("1s")
        Duration timeout();
    }

    interface Callbacks {
        /**
         * Tries of one dead-job callback before it fails for good (shown on the dashboard's topic
         * page, counted by {@code delayq.callbacks.failed}, logged at WARN with the job). Default 10.
         */
        @WithDefault("10")
        int maxAttempts();

        /** Delay before a callback's second try; doubled after each failure, up to {@code retry-max}. Default 1 s. */
        @WithDefault("1s")
        Duration retryInitial();

        /** Longest delay between two tries of a callback. Default 5 min. */
        @WithDefault("5m")
        Duration retryMax();

        /**
         * Time allowed for one callback call, from asking for a connection to the end of the answer
         * (one deadline for the whole call). A callback taken by a replica is left to it this long
         * plus 5 s; past that any replica with the topic's {@code dead-url} takes it again (the
         * replica may have died). Default 10 s.
         */
        @WithDefault("10s")
        Duration timeout();

        /**
         * Most callbacks one replica sends at once, over all topics and partitions, and the size of
         * its callback connection pool per host: a replica claims only as many callbacks as it has
         * free, so none waits for a connection while its claim runs out. Default 16.
         */
        @WithDefault("16")
        int maxInFlight();

        /**
         * How often every replica with a {@code dead-url} looks for callbacks due in the partitions
         * of its topics: on a single Redis one command for all of them (the earliest callback of
         * each), on a cluster one per partition, never a second while one is unanswered; the claim
         * script only where one is due. The replica that buries a job sends its callback at once;
         * this poll is for the callbacks of a replica that died first, and for retries. Default 5 s.
         */
        @WithDefault("5s")
        Duration pollInterval();
    }

    interface Dead {
        /**
         * Most dead jobs a topic keeps: a job that dies over it removes the oldest dead jobs of its
         * partition in the same step (each partition keeps its share, max-jobs / partitions rounded
         * up), counted in {@code delayq_jobs_dead_trimmed_total} and logged at INFO. The failed
         * dead-job callbacks of a topic are bounded the same way. 0 = no bound. Default 10000.
         */
        @WithName("max-jobs")
        @WithDefault("10000")
        int maxJobs();

        /**
         * How long a dead job (and a failed dead-job callback) is kept: older ones are removed by a
         * burial in their partition and by the dead sweep (one topic every ten minutes per
         * replica, in turn, over the topics it serves). 0 = no bound. Default 30 days.
         */
        @WithName("max-age")
        @WithDefault("30d")
        Duration maxAge();
    }

    interface Results {
        /**
         * Most succeeded jobs a topic with {@code result-retention} keeps: a success over it removes
         * the oldest succeeded jobs of its partition in the same step (each partition keeps its
         * share, max-jobs / partitions rounded up). A kept job holds its record and its result (at
         * most {@code delayq.api.max-payload-bytes}): size Redis for max-jobs × such topics × (payload +
         * result). 0 = no bound but the retention. Default 10000.
         */
        @WithName("max-jobs")
        @WithDefault("10000")
        int maxJobs();
    }

    interface History {
        /**
         * Whether this replica records what it enqueues and runs into the history (per-minute
         * buckets in Redis that expire after 25 hours; see docs/operations.md, "History"). Off, it
         * writes nothing; the endpoints still read what other replicas recorded. Default true.
         */
        @WithDefault("true")
        boolean enabled();

        /**
         * How often this replica adds what it counted to Redis: one script call per topic and hour
         * it counted something in, plus one for the total; nothing when it counted nothing. The
         * history lags by up to this much. Also flushed at shutdown. Default 10 s.
         */
        @WithDefault("10s")
        Duration flushInterval();
    }

    interface Drain {
        /**
         * On shutdown, how long running jobs get to finish before they are put back into Redis,
         * due at once, for another replica. Default 20 s.
         */
        @WithDefault("20s")
        Duration timeout();
    }

    interface Topic {
        /** Longest run of one attempt of this topic. Default: {@code delayq.dispatch.attempt-timeout}. */
        Optional<Duration> attemptTimeout();

        /** Jobs of this topic running at once on this replica. Default: {@code delayq.dispatch.concurrency}. */
        OptionalInt concurrency();

        /** Attempts before dead. Default: {@code delayq.retry.max-attempts}. */
        OptionalInt maxAttempts();

        /** Delay before the second attempt. Default: {@code delayq.retry.initial}. */
        @WithName("retry.initial")
        Optional<Duration> retryInitial();

        /** Backoff factor. Default: {@code delayq.retry.multiplier}. */
        @WithName("retry.multiplier")
        OptionalDouble retryMultiplier();

        /** Largest delay between attempts. Default: {@code delayq.retry.max}. */
        @WithName("retry.max")
        Optional<Duration> retryMax();

        /**
         * How long the id of a job of this topic is remembered after the job succeeded. Within
         * the window an enqueue of the same id (REST, batch or {@code Jobs.schedule}) runs nothing
         * and answers 200 with state {@code succeeded} and the time it finished, and so does a
         * look-up of the job; past it the id is free and an enqueue schedules it anew. It costs
         * about 120 bytes of Redis memory per id remembered (see docs/concepts.md, "Dedup window"), and
         * a few sorted-set commands per ack call. Unset or {@code 0} (the default): off, an id is
         * free again the moment its job succeeds.
         */
        Optional<Duration> dedupWindow();

        /**
         * Most jobs of this topic taken per second, by all replicas together; a fraction is
         * allowed ({@code 0.5}: one job every 2 s). The take script enforces it with Redis time,
         * so that any number of replicas stay within it, and tells a held-back taker when to come
         * back. With {@code delayq.partitions} P, each partition takes at most a P-th of it. A limit
         * set by an operator ({@code PUT /topics/<t>/rate-limit}, kept in Redis) wins over this one
         * until it is deleted. Give every replica that serves the topic the same value. Unset (the
         * default): no limit.
         */
        OptionalDouble rateLimit();

        /**
         * Most jobs of this topic running at once, over all replicas together (a concurrency cap:
         * "never more than 5 calls to the partner API at a time"). The take script enforces it
         * against the jobs in flight in Redis, so that any number of replicas stay within it; a
         * take held back by it sleeps until a job of the topic ends (that step wakes it), no
         * polling. With {@code delayq.partitions} P, partition i runs at most floor(N / P) of them,
         * plus one when i &lt; N mod P (the shares sum to N), so N must be at least P. A cap set by an
         * operator ({@code PUT /topics/<t>/max-in-flight}, kept in Redis) wins over this one until
         * it is deleted. Give every replica that serves the topic the same value. Unset (the
         * default): no cap beyond each replica's {@code concurrency}.
         */
        OptionalInt maxInFlight();

        /**
         * Most jobs of one group of this topic running at once, over all replicas together (an
         * enqueue names its job's {@code group}: "one job per customer at a time"). A group's jobs
         * start in runAt order, so 1 runs each group's jobs one after the other, in order. A due job
         * of a group at its limit is held back (state {@code scheduled}, {@code held: true}) without
         * delaying other groups' jobs, and when one of the group's jobs ends, the group's next job
         * queues behind the jobs due by then, so that groups are served in turn. A group's jobs all
         * live in one partition (the group picks it). Give every replica that serves the topic the
         * same value. Unset (the default): the group is recorded and shown, no limit.
         */
        OptionalInt groupMaxInFlight();

        /**
         * Most jobs of one group of this topic taken per second, over all replicas together ("at
         * most 5 calls per second per tenant"); a fraction is allowed ({@code 0.5}: one job of the
         * group every 2 s). A GCRA per group in Redis time, kept in the group's partition, beside
         * {@code group-max-in-flight} (both apply). A due job of a group at its limit is put off to
         * the group's next turn (state {@code scheduled}, its runAt that turn) without delaying any
         * other group's job; only the topic's own limits (pause, {@code rate-limit},
         * {@code max-in-flight}) hold every group back. A group's limiter state expires about a
         * minute after its last turn. A limit set by an operator ({@code PUT
         * /topics/<t>/group-rate-limit}, kept in Redis) wins over this one until it is deleted. Give
         * every replica that serves the topic the same value. Unset (the default): no limit per group.
         */
        OptionalDouble groupRateLimit();

        /** An HTTP endpoint that runs this topic's jobs (see {@code io.delayq.http}). */
        Http http();

        /**
         * URL delayq POSTs to when a job of this topic goes to the dead set (its last attempt
         * failed, a permanent failure, too many lost attempts), with the body {@code {"topic", "id",
         * "attempts", "lostAttempts", "lastError", "diedAt", "payload"}}; any topic, observer or HTTP
         * target, signed when the topic has {@code http.signing-keys}. Recorded in Redis in the step
         * that buries the job and delivered at least once, with retries ({@code delayq.callbacks.*}).
         * Give it to every replica that serves the topic: a replica without it buries jobs without
         * recording a callback. Unset (the default): no callback. User info in the URL is sent as
         * HTTP Basic; the URL is shown and logged without user info and query values.
         */
        Optional<String> deadUrl();

        /** This topic's {@code delayq.dead.max-jobs}. */
        @WithName("dead.max-jobs")
        OptionalInt deadMaxJobs();

        /** This topic's {@code delayq.dead.max-age}. */
        @WithName("dead.max-age")
        Optional<Duration> deadMaxAge();

        /**
         * How long a succeeded job of this topic stays readable ({@code GET /jobs/<t>/<id>} with
         * state {@code succeeded}, {@code finishedAt} and {@code result}: what its observer set with
         * {@code Job.result(Object)}, or its HTTP target's 2xx body), and listed with
         * {@code state=succeeded}. Moved there by the ack itself, bounded by
         * {@code delayq.results.max-jobs} (oldest first) and by this age. A result larger than
         * {@code delayq.api.max-payload-bytes} is dropped ({@code resultDropped: true}; an HTTP
         * body is kept cut, {@code resultCut: true}); while Redis is full nothing is kept (the job
         * is acked all the same). Unset or {@code 0} (the default): off, a succeeded job leaves no
         * trace (but its dedup window's).
         */
        Optional<Duration> resultRetention();
    }

    interface Http {
        /**
         * URL the built-in observer POSTs each job's payload to; 2xx = done. Unset (the default):
         * no HTTP target for this topic. User info in it ({@code http://user:password@host/...},
         * percent-encoded) is sent to the target as HTTP Basic; wherever the URL is shown or logged
         * ({@code GET /topics}, lastError, dashboard, Dev UI, log) its user info and query values
         * read {@code ***}.
         */
        Optional<String> url();

        /**
         * Time allowed for the HTTP call, from the moment it asks for a connection to the end of
         * the answer; past it the attempt fails. A call that timed out before it got a connection
         * never reached the target and may be retried at once; one that was sent is retried no
         * sooner than this long after it timed out (the target may still be running it). Default 10 s.
         */
        @WithDefault("10s")
        Duration timeout();

        /**
         * Most connections this replica opens to the target. Over HTTP/1.1 each connection carries
         * one call at a time (kept alive and reused, never pipelined), so this is also the most
         * calls in flight; calls beyond it wait for a free connection, within their
         * {@code timeout}. Over HTTP/2 one connection carries many calls at once (as many as the
         * target allows, often 100 or more), and a further one opens only when those are all in
         * use. The topic's {@code concurrency} bounds the calls in flight as well. Default 32.
         */
        @WithDefault("32")
        int maxConnections();

        /**
         * Speak HTTP/2 over cleartext ({@code h2c}, with prior knowledge: no upgrade round trip) to an
         * {@code http://} target. Only for a target that accepts it (Vert.x, Netty, Node's
         * {@code http2.createServer}, gRPC-style servers, Envoy...): an HTTP/1.1-only server
         * answers nothing sensible. An {@code https://} target needs no setting: HTTP/2 is
         * negotiated by ALPN when the target offers it, HTTP/1.1 otherwise. Default false.
         */
        @WithDefault("false")
        boolean h2c();

        /**
         * Longest a target's 429 or 503 answer with {@code Retry-After} may hold the topic. Such an
         * answer snoozes the job until the time asked (the attempt not counted) and holds the whole
         * topic until then, on every replica; a longer {@code Retry-After} (or an HTTP date further
         * ahead) holds for this long, so that a broken target cannot park the topic for a year.
         * Without {@code Retry-After} a 429 or 503 is an ordinary failure. At most
         * {@code delayq.horizon}, the furthest ahead a job may be put (the start fails naming this
         * setting otherwise). Default 1 h, or {@code delayq.horizon} when that is shorter.
         */
        Optional<Duration> maxRetryAfter();

        /**
         * For an {@code https://} target: the name of a TLS configuration of the Quarkus TLS
         * registry ({@code quarkus.tls.<name>.trust-store...}, {@code .key-store...} for a client
         * certificate, {@code .trust-all}, {@code .hostname-verification-algorithm}) to call it
         * with, e.g. to trust an internal CA. Unset: the registry's default configuration
         * ({@code quarkus.tls.trust-store...}) when there is one, else the JVM's trusted CAs; the
         * target's host name is checked either way unless the configuration turns it off.
         */
        Optional<String> tlsConfigurationName();

        /**
         * Secrets to sign this topic's calls with (its job calls and its dead-job callbacks), comma
         * separated, each at least 16 bytes (32 random bytes recommended): every call then carries
         * {@code X-Delayq-Signature: t=<epoch ms>,v1=<hex>[,v1=<hex>...]}, one {@code v1} per key (see
         * {@code io.delayq.SignatureVerifier}). Two keys while rotating: the new one beside the old
         * one, move the receivers, drop the old. A key that is empty or too short fails start-up,
         * naming the topic. Set it from a secret (env {@code DELAYQ_TOPICS__<T>__HTTP_SIGNING_KEYS}
         * from a Kubernetes Secret), never in a file. Unset (the default): calls are not signed.
         */
        Optional<String> signingKeys();
    }
}
