#!/usr/bin/env bash
# Reproduces the README's performance tables: builds shoald --release, starts it on free
# loopback ports, and runs the team's yardstick against it, which starts its own reference
# server and compares the two, interleaved, on the same machine:
#   scripts/bench.sh            RESP: ../shared/bench/resp-bench.sh against redis-server
#   scripts/bench.sh memcache   Memcached protocol: ../shared/bench/memcache-bench.sh against
#                               memcached (needs memcached and libmemcached-tools)
# Tune the yardsticks with their environment knobs (ROUNDS, SECS, CLIENTS, VSIZE, MEM_KEYS...).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-resp}" in
  resp) BENCH=${RESP_BENCH:-../shared/bench/resp-bench.sh}; pattern='listening on 127\.0\.0\.1:[0-9]*' ;;
  memcache) BENCH=${MEMCACHE_BENCH:-../shared/bench/memcache-bench.sh}; pattern='memcached protocol listening on 127\.0\.0\.1:[0-9]*' ;;
  *) echo "usage: $0 [resp|memcache]"; exit 2 ;;
esac
[ -f "$BENCH" ] || { echo "bench: $BENCH not found"; exit 2; }

cargo build --release -p shoald
log=$(mktemp)
./target/release/shoald --port 0 --memcache-port 0 --maxmemory 0 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
addr=""
for _ in $(seq 1 100); do
  addr=$(grep -o "$pattern" "$log" | head -1 | grep -o '127\.0\.0\.1:[0-9]*' || true)
  [ -n "$addr" ] && break
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
[ -n "$addr" ] || { echo "bench: shoald did not start"; cat "$log"; exit 1; }
CANDIDATE_PID=$pid bash "$BENCH" "$addr"
