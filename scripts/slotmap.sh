#!/usr/bin/env bash
# What Redis Cluster clients pay for Shoal's slot map at N nodes: starts N release shoald
# processes on free loopback ports as a static cluster with cluster-client ports (one worker
# thread each), then prints CLUSTER SLOTS's size and time, redis-py's start, memory and
# refresh, and ioredis's and node-redis's time to ready and heap growth.
#   scripts/slotmap.sh [N]      (default 3; 100 processes need about 1.5 GB)
#   scripts/slotmap.sh redis    the same clients against a 3-master Redis Cluster of
#                               redis-server processes (3 contiguous ranges), for reference
# Needs the clients of scripts/test.sh (pip redis, npm ci in tests/clients).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3}
if [ "$N" = redis ]; then
  tmp=$(mktemp -d)
  pids=()
  trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
  read -r -a p <<<"$(python3 -c "import socket
s=[socket.socket() for _ in range(3)]
[x.bind(('127.0.0.1',0)) for x in s]
print(' '.join(str(x.getsockname()[1]) for x in s))")"
  for i in 0 1 2; do
    mkdir -p "$tmp/r$i"
    (cd "$tmp/r$i" && exec redis-server --port "${p[$i]}" --bind 127.0.0.1 --cluster-enabled yes \
      --save '' --appendonly no >/dev/null 2>&1) &
    pids+=("$!")
  done
  for i in 0 1 2; do
    for _ in $(seq 1 100); do redis-cli -p "${p[$i]}" PING >/dev/null 2>&1 && break; sleep 0.05; done
  done
  redis-cli --cluster create "127.0.0.1:${p[0]}" "127.0.0.1:${p[1]}" "127.0.0.1:${p[2]}" \
    --cluster-yes >/dev/null
  for _ in $(seq 1 200); do
    redis-cli -p "${p[0]}" CLUSTER INFO | grep -q cluster_state:ok && break; sleep 0.05
  done
  addr="127.0.0.1:${p[0]}"
  echo "Redis Cluster, 3 masters: $(python3 tests/clients/slotmap.py "$addr") $(cd tests/clients && node --expose-gc slotmap.js ioredis "$addr") $(cd tests/clients && node --expose-gc slotmap.js node-redis "$addr")"
  exit 0
fi
SHOALD=${SHOALD:-}
[ -n "$SHOALD" ] || { cargo build --release -q -p shoald; SHOALD=./target/release/shoald; }
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
ports=$(python3 -c "import socket
s=[socket.socket() for _ in range(3*$N)]
[x.bind(('127.0.0.1',0)) for x in s]
print(' '.join(str(x.getsockname()[1]) for x in s))")
read -r -a p <<<"$ports"
nodes=""
for i in $(seq 0 $((N - 1))); do
  nodes+="${nodes:+,}n$i=127.0.0.1:${p[3*i]}@${p[3*i+1]}+${p[3*i+2]}"
done
export SHOAL_CLUSTER_SECRET=slotmap-test-cluster-secret
for i in $(seq 0 $((N - 1))); do
  "$SHOALD" --port "${p[3*i]}" --maxmemory 64mb --set threads=1 --set "node-name=n$i" \
    --set "cluster-nodes=$nodes" 2>"$tmp/n$i.log" &
  pids+=("$!")
done
for i in $(seq 0 $((N - 1))); do
  for _ in $(seq 1 200); do
    grep -q "Redis Cluster clients listening" "$tmp/n$i.log" && break
    kill -0 "${pids[$i]}" 2>/dev/null || { cat "$tmp/n$i.log"; exit 1; }
    sleep 0.05
  done
done
addr="127.0.0.1:${p[2]}"
echo "N=$N: $(python3 tests/clients/slotmap.py "$addr") $(cd tests/clients && node --expose-gc slotmap.js ioredis "$addr") $(cd tests/clients && node --expose-gc slotmap.js node-redis "$addr")"
