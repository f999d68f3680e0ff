#!/usr/bin/env bash
# Redis memory per scheduled job and Redis µs per job taken and acked under three layouts of a
# partition's records (bench/record-layouts.lua says what each is), in one run on one fresh
# redis-server (its own, on a free port, no persistence). Each layout is measured on an empty
# Redis: used_memory before and after N jobs (16-byte payload), then INFO commandstats' EVALSHA
# time while every job is taken and acked 100 per call. "today" runs first and last, so that the
# drift of the machine within the run shows.
#
#   bench/record-layouts.sh [--n 100000] [--per-key 64] [--per-field 32]
#
# --per-key / --per-field: jobs per bucket the bucket count is sized for (keys: a listpack of at
# most hash-max-listpack-entries fields, 512 in Redis' built-in default, 128 in Debian's
# redis.conf; blob: the size of the string cut on every ack).
set -euo pipefail
cd "$(dirname "$0")"
N=100000 PER_KEY=64 PER_FIELD=32
while [ $# -gt 0 ]; do
  case "$1" in
    --n) N=$2; shift 2 ;;
    --per-key) PER_KEY=$2; shift 2 ;;
    --per-field) PER_FIELD=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install -y redis-server)" >&2; exit 2; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >/dev/null &
RPID=$!
trap 'kill $RPID 2>/dev/null || true' EXIT
C="redis-cli -p $PORT"
for ((i = 0; i < 200; i++)); do $C PING >/dev/null 2>&1 && break; sleep 0.05; done
$C PING >/dev/null 2>&1 || { echo "redis-server did not start on port $PORT" >&2; exit 1; }
SHA=$($C SCRIPT LOAD "$(cat record-layouts.lua)")
info() { $C INFO "$1" | tr -d '\r' | grep "^$2:" | cut -d: -f2; }
evalsha_usec() { $C INFO commandstats | tr -d '\r' | grep '^cmdstat_evalsha:' | sed 's/.*usec=\([0-9]*\),.*/\1/'; }

mkdir -p results
OUT=results/record-layouts.jsonl
echo "record layouts: n=$N, 16-byte payload, take+ack 100 per call, Redis $(info server redis_version)" >&2
printf '%-7s %8s %10s %16s\n' layout buckets "B/job" "take+ack µs/job"
RUN=$(date -u +%Y-%m-%dT%H:%M:%SZ)
POS=0
for L in today keys blob today; do
  POS=$((POS + 1))
  case $L in
    today) NB=1 ;;
    keys) NB=$(( (N + PER_KEY - 1) / PER_KEY )) ;;
    blob) NB=$(( (N + PER_FIELD - 1) / PER_FIELD )) ;;
  esac
  $C FLUSHALL SYNC >/dev/null
  M0=$(info memory used_memory)
  # One redis-cli reads every call from its stdin, in order (a process per call would cost more
  # than the calls at 5,000,000 jobs).
  for ((first = 0; first < N; first += 1000)); do echo "EVALSHA $SHA 0 $L fill $N $NB 1000 $first"; done \
    | $C | awk '$0 != "0" { print "fill failed: " $0 > "/dev/stderr"; bad = 1 } END { exit bad }' \
    || exit 1
  [ "$($C ZCARD dq:{t#0}:due:20261202)" = "$N" ] || { echo "$L: fill left $($C ZCARD dq:{t#0}:due:20261202) of $N due" >&2; exit 1; }
  M1=$(info memory used_memory)
  $C CONFIG RESETSTAT >/dev/null
  TAKEN=$(for ((i = 0; i <= N / 100; i++)); do echo "EVALSHA $SHA 0 $L take $N $NB 100"; done \
    | $C | awk '/^[0-9]+$/ { s += $1; next } { print "take failed: " $0 > "/dev/stderr"; bad = 1 } END { print bad ? -1 : s }')
  [ "$TAKEN" = "$N" ] || { echo "$L: took $TAKEN of $N" >&2; exit 1; }
  # Every job taken and acked: nothing is left of it (due entry, in-flight entry, lease, record).
  [ "$($C DBSIZE)" = 0 ] || { echo "$L: $($C DBSIZE) keys left after every job was acked" >&2; exit 1; }
  US=$(evalsha_usec)
  BPJ=$(python3 -c "print(round(($M1 - $M0) / $N, 1))")
  UPJ=$(python3 -c "print(round($US / $N, 2))")
  printf '%-7s %8s %10s %16s\n' "$L" "$([ $L = today ] && echo - || echo $NB)" "$BPJ" "$UPJ"
  echo "{\"schema\":\"delayq-bench/v1\",\"scenario\":\"record-layouts\",\"run\":\"$RUN\",\"position\":$POS,\"layout\":\"$L\",\"n\":$N,\"buckets\":$NB,\"mem_b_per_job\":$BPJ,\"take_ack_usec_per_job\":$UPJ}" >>"$OUT"
done
