#!/usr/bin/env bash
# delayq benchmark: builds the benchmark program (module bench/: the extension plus no-op
# observers and the scenarios, into bench/target) and runs it. It starts its own redis-server on a free port and runs delayq
# in-process (REST API, takers, workers, no-op observers); the replicas scenario starts extra
# replica processes of the same jar. Prints one JSON line per scenario and a table; the lines
# also go to bench/results/last-run.jsonl.
#
#   bench/run.sh                      all default scenarios (about 8 minutes on 2 cores):
#                                     steady500 spread spread200k burst idle backlog replicas http h2c wrk
#   bench/run.sh http,h2c             the HTTP-target path (HTTP/1.1, h2c) to a receiver process
#                                     started from the same jar (--receiver): its ceiling, a burst,
#                                     a 5,000 jobs/s spread, delayq CPU per job
#   bench/run.sh wrk                  single-job POST /jobs under wrk (from PATH; Debian:
#                                     apt-get install -y wrk), -t2 -c64 -d15s, against its floor in
#                                     the same run: a bare Vert.x route on the same server running the
#                                     same enqueue script for the same body (ratio, target >= 0.7);
#                                     then POST /jobs and the floor at a fixed 80 % of the floor's
#                                     rate (wrk paced by its script's delay()): p50/p99/max, target
#                                     p99 <= 20 ms; BENCH_WRK_THREADS, BENCH_WRK_CONNECTIONS,
#                                     BENCH_WRK_SECONDS, BENCH_WRK_BATCH_JOBS change it;
#                                     BENCH_WRK_JFR=DIR records the full-speed phases and the
#                                     fixed-rate POST /jobs (DIR/floor.jfr, post.jfr, post-paced.jfr)
#   bench/run.sh spread,burst --n 50000 --window 10 --start 5
#   bench/run.sh backlog --small 10000 --big 5000000
#   bench/run.sh smoke                a few hundred jobs per scenario (CI); the idle replica's Redis
#                                     commands/s checked over 30 s (empty case)
# Every idle figure (idle, and those of topics and history) fails the run (exit 1, a FAILED line on
# stderr) above 1 Redis command/s per replica (total_commands_processed, script internals included).
#   bench/run.sh coldwarm [--n 50000] burst and spread, each in a fresh JVM: first cold (the first
#                                     thing the JVM runs), then the same again after a warm-up; then
#                                     server-cold: the packaged server (built with -Paot, which trains
#                                     its AOT cache) as a fresh process per figure, plain JVM, AOT
#                                     cache (with the JVM options of Dockerfile.jvm's ENTRYPOINT)
#                                     and warm: exec to ready, POST /jobs over the first 15 s
#                                     of wrk -t2 -c64 (5 s windows), a 20,000-job HTTP-target burst
#                                     due at start (ServerColdScenario); BENCH_COLD_REPS (default 3)
#                                     fresh processes per variant, BENCH_SERVER_APP another quarkus-app
#                                     directory, BENCH_COLD_FLAGS JVM flags added to every variant
#                                     (warm included: a flag tried before it is shipped; default
#                                     -XX:+UseSerialGC -Xmx128m, what the JVM picks in
#                                     k8s/deployment.yaml's 2-CPU 512 MiB container; " " for this
#                                     machine's own), warm-aot: each aot process warm too (median),
#                                     BENCH_COLD_VARIANTS='name=flags;name=flags' more AOT-cache
#                                     variants, alternating with the others (ratio to plain's warm);
#                                     a variant's --app=DIR runs another build's quarkus-app (its jar
#                                     and app.aot), e.g. a worktree of the commit before a change
#   bench/run.sh burst,dedup          dedup (on request only): a burst on a topic with a dedup
#                                     window, memory per remembered id, the ids enqueued again
#   bench/run.sh results --n 50000   results (on request only): a burst on a topic without result
#                                     retention and one that keeps every job 10 min with a small
#                                     result, twice in turn: throughput ratio (target >= 0.8) and Redis
#                                     bytes per kept job
#   bench/run.sh listing --n 5000000  listing (on request only): Redis ms of one 1,000-job page of
#                                     GET /topics/{t}/jobs from a topic of N jobs (target <= 50 ms)
#   bench/run.sh rediscost --n 50000  rediscost (on request only): Redis µs per enqueue script, one job
#                                     per call and 1,000 per call, Redis B per job, Redis µs per job
#                                     taken and acked (INFO commandstats, used_memory)
#   bench/run.sh cancel               cancel (on request only: its 2 replica starts took 46 s of a 30-cancel
#                                     smoke run on the loaded machine, too much for CI): cancel latency of
#                                     running jobs, default settings, 3 replicas (this process and 2
#                                     replica processes): rounds of 30 jobs due now (concurrency 10 per
#                                     replica: 10 each) whose sync observer sleeps 2 min; once all run,
#                                     DELETE /jobs/{t}/{id} of each (202); latency from just before the
#                                     DELETE (client) to the observer's interrupt (the attempt's own
#                                     record): p50/p99/max over 200 cancels, target p99 <= 1 s; none
#                                     may run again or stay in Redis
#   bench/run.sh markcost [--n 50000 --rounds 6]
#                                     markcost (on request only; needs the git clone): the cancel mark's
#                                     cost on the hot path: today's take/ack/extend/lib.lua against those
#                                     of 3f9bb42 (before issue 32, read with git show at run time), same
#                                     Redis, rounds alternating today/base: N due jobs taken 100 per call,
#                                     each take acking the previous one's: Redis µs per job (INFO
#                                     commandstats) and take+ack jobs/s of one caller, medians and
#                                     ratios; target within 5 %
#   bench/run.sh flow [--n 50000]    flow (on request only): a burst of N jobs on a topic without a
#                                     concurrency cap, with one that does not bind (256) and one that
#                                     binds (16), then with 1 group (a limit that does not bind), 100
#                                     and 10,000 groups (group-max-in-flight 1): throughput, Redis
#                                     commands, CPU µs and script µs per job
#   bench/run.sh grouprate            grouprate (on request only, about 2 minutes): the group rate limit
#                                     over 3 replicas (this process and 2 replica processes): a backlog
#                                     of 100 groups' jobs on a topic with group-rate-limit 5, resumed at
#                                     once; each group's rate over 60 s from 5 s after the resume: min,
#                                     median, max, groups outside 5/s +-10 % (exit 1 if any, or a
#                                     duplicate), the topic's total (500/s expected);
#                                     BENCH_GROUP_RATE_SECONDS=N a shorter window for a try
#   bench/run.sh priority [--n 50000]
#                                     priority (on request only, about 3 minutes; PriorityScenario):
#                                     (a) the burst of N jobs without a priority and with mixed
#                                     priorities (job i: 1 + i mod 5), BENCH_PRIORITY_WARMUP (1) pairs
#                                     not counted, then BENCH_PRIORITY_ROUNDS (3) rounds
#                                     of both in alternating order: medians of throughput, Redis CPU
#                                     per job and Redis memory per job (the target's without the
#                                     connections' buffers), mixed/none ratios (targets
#                                     >= 0.9, <= 1.15, <= 1.05); (b) 100,000 priority-5 jobs due, then
#                                     100 tries of a priority-1 job enqueued into them: on an unserved
#                                     topic, whether the next take (64 jobs) has it; on a served one
#                                     whose workers are kept busy (BENCH_PRIORITY_WORK_MS, 20 ms a job),
#                                     its wait from POST /jobs to start p50/p99/max and the takes
#                                     between the reply and the start (at most 2: within one take)
#   bench/run.sh history --n 50000   (on request only) the dashboard history's cost: an N-job burst
#                                     with the history off, then on (flushed every second), throughput
#                                     and Redis commands per job of each; idle commands/s with it on and off
#   bench/run.sh topics [--topics 250 --partitions 4]
#                                     (on request only) one replica serving many HTTP-target
#                                     topics: threads, RSS, idle commands/s, lateness and wake-up
#                                     latency of many topics against one, in the same run
#   bench/run.sh chaos [--minutes 5] [--seed S] [--rate 100]
#                                     (on request only, alone; CI runs 2 minutes) the nemesis soak:
#                                     3 replica processes, each in a network namespace of its own
#                                     (needs root and iproute2's ip), one redis-server with an AOF
#                                     (appendfsync always), R jobs/s through the replicas' POST /jobs
#                                     to an HTTP target that works 0-2 s, lease 6 s, heartbeat 2 s;
#                                     one fault at a time, 3-7 s apart, the five kinds in shuffled
#                                     rounds: SIGKILL a replica (restarted), SIGSTOP one beyond the
#                                     lease, cut one off (veth down), SIGKILL Redis (restarted on its
#                                     AOF), CLIENT PAUSE 3-8 s. Then a drain and a check
#                                     of every delivery: lost jobs, duplicates explained by their
#                                     holder's fault or not, lateness against fault + lease + 2 s.
#                                     Exit 1 on a lost job or an unexplained duplicate; its files
#                                     (faults, deliveries, replica logs, verdict) in bench/results/chaos/
#   bench/run.sh outbox [--seconds 10] [--warmup 15] [--rates 100,2000] [--batch-size 100]
#                                     (on request only, alone; needs Debian's postgresql) the
#                                     transactional outbox (OutboxScenario): its own PostgreSQL and
#                                     redis-server, this jar run again as a service process per mode:
#                                     outbox woken by LISTEN/NOTIFY, outbox polling only (1 s), and
#                                     a plain enqueue after commit as the baseline; one row + one job
#                                     per transaction at 100 and 2,000 tx/s, each after a warm-up at
#                                     that rate (--warmup s, all arrived first): delay commit -> Redis
#                                     and commit -> observer p50/p99/max (target p99 <= 200 ms with
#                                     LISTEN/NOTIFY), the transaction's time and PostgreSQL's CPU per
#                                     transaction; BENCH_OUTBOX_LOG=DEBUG logs the relay's passes
#   bench/run.sh bodies               (on request only; package the server first: ./mvnw -B package
#                                     -pl server -am -DskipTests) the packaged server on -Xmx512m
#                                     receives 32 maximum-size batches at once (1,000 jobs of 60,000-
#                                     byte payloads, ~60 MB each): how many answered 200, 503, 500,
#                                     its heap peak, an OutOfMemoryError or not (BodiesScenario)
#   bench/run.sh spread,burst --cluster 3 [--partitions 3]
#                                     on a local Redis Cluster of 3 masters (redis-server and
#                                     redis-cli from PATH): Redis CPU per master and its balance
# BENCH_JAVA_OPTS: extra JVM options for the bench process (e.g. -XX:StartFlightRecording=...).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${JAVA_HOME:-}" ]; then
  for jdk in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-21-jdk-amd64 /usr/lib/jvm/java-21-openjdk-amd64; do
    if [ -x "$jdk/bin/java" ]; then export JAVA_HOME="$jdk"; break; fi
  done
fi
if [ "${BENCH_NO_BUILD:-}" != "1" ]; then
  ./mvnw -B -q package -DskipTests -pl bench -am
fi
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
if [ "${1:-}" = "coldwarm" ]; then
  # Each kind in a fresh JVM: its first run is cold (no warm-up before it), then the same again warm.
  shift
  status=0
  if [ "${BENCH_NO_BUILD:-}" != "1" ]; then
    ./mvnw -B -q package -DskipTests -pl server -am -Paot
  fi
  "$java" -Xmx2g ${BENCH_JAVA_OPTS:-} -jar bench/target/quarkus-app/quarkus-run.jar burst-cold "$@" || status=$?
  BENCH_APPEND=1 "$java" -Xmx2g ${BENCH_JAVA_OPTS:-} -jar bench/target/quarkus-app/quarkus-run.jar spread-cold "$@" || status=$?
  BENCH_APPEND=1 "$java" -Xmx2g ${BENCH_JAVA_OPTS:-} -jar bench/target/quarkus-app/quarkus-run.jar server-cold || status=$?
  exit $status
fi
exec "$java" -Xmx2g ${BENCH_JAVA_OPTS:-} -jar bench/target/quarkus-app/quarkus-run.jar "$@"
