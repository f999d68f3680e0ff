#!/usr/bin/env bash
# delayq benchmark: builds the benchmark program (module bench/: the extension plus no-op
# observers and the scenarios, into bench/target) and runs it. It starts its own redis-server on a free port and runs delayq
# in-process (REST API, takers, workers, no-op observers); the replicas scenario starts extra
# replica processes of the same jar. Prints one JSON line per scenario and a table; the lines
# also go to bench/results/last-run.jsonl.
#
#   bench/run.sh                      all default scenarios (about 7 minutes on 2 cores):
#                                     steady500 spread spread200k burst idle backlog replicas http
#   bench/run.sh spread,burst --n 50000 --window 10 --start 5
#   bench/run.sh backlog --small 10000 --big 5000000
#   bench/run.sh smoke                a few hundred jobs per scenario (CI)
#   bench/run.sh burst,dedup          dedup (on request only): a burst on a topic with a dedup
#                                     window, memory per remembered id, the ids enqueued again
#   bench/run.sh topics [--topics 250 --partitions 4]
#                                     (on request only) one replica serving many HTTP-target
#                                     topics: threads, RSS, idle commands/s, lateness and wake-up
#                                     latency of many topics against one, in the same run
#   bench/run.sh spread,burst --cluster 3 [--partitions 3]
#                                     on a local Redis Cluster of 3 masters (redis-server and
#                                     redis-cli from PATH): Redis CPU per master and its balance
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
exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" -Xmx2g -jar bench/target/quarkus-app/quarkus-run.jar "$@"
