#!/usr/bin/env bash
# Reproduces the README's performance table: builds shoald --release, starts it on a free
# loopback port, and runs the team's yardstick (../shared/bench/resp-bench.sh), which starts
# its own redis-server and compares the two, interleaved, on the same machine.
# Extra arguments are passed to nothing; tune the yardstick with its environment knobs
# (ROUNDS, SECS, CLIENTS, PIPE, VSIZE, MEM_KEYS, ...). Needs redis-server and redis-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${RESP_BENCH:-../shared/bench/resp-bench.sh}
[ -f "$BENCH" ] || { echo "bench: $BENCH not found (set RESP_BENCH)"; exit 2; }

cargo build --release -p shoald
log=$(mktemp)
./target/release/shoald --port 0 --maxmemory 0 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
addr=""
for _ in $(seq 1 100); do
  addr=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$log" | head -1 | cut -d' ' -f3 || true)
  [ -n "$addr" ] && break
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
[ -n "$addr" ] || { echo "bench: shoald did not start"; cat "$log"; exit 1; }
CANDIDATE_PID=$pid bash "$BENCH" "$addr"
