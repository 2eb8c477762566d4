#!/usr/bin/env bash
# Starts (or stops) the example 3-node cluster of config/cluster/ on 127.0.0.1:7001-7003.
#
#   scripts/cluster.sh          build shoald (release) and start n1, n2, n3 in the background
#   scripts/cluster.sh stop     stop them (SIGTERM)
#
# The nodes share SHOAL_CLUSTER_SECRET; when it is not set, a random one is made for this run.
# Logs and pids go to target/cluster/. Then: redis-cli -p 7001 set k v; redis-cli -p 7003 get k
# Redis Cluster clients use the cluster-client ports 7011-7013: redis-cli -c -p 7011 get k
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/cluster
mkdir -p "$dir"

if [[ "${1:-start}" == "stop" ]]; then
    for i in 1 2 3; do
        if [[ -f "$dir/n$i.pid" ]]; then
            kill "$(cat "$dir/n$i.pid")" 2>/dev/null || true
            rm -f "$dir/n$i.pid"
        fi
    done
    echo "stopped"
    exit 0
fi

cargo build --release -q -p shoald
export SHOAL_CLUSTER_SECRET="${SHOAL_CLUSTER_SECRET:-$(head -c 24 /dev/urandom | base64)}"
for i in 1 2 3; do
    target/release/shoald --config "config/cluster/n$i.toml" >"$dir/n$i.log" 2>&1 &
    echo $! >"$dir/n$i.pid"
done
# Ready when every node answers PING (bounded wait, no fixed sleep for readiness).
for i in 1 2 3; do
    for _ in $(seq 1 100); do
        if (exec 3<>/dev/tcp/127.0.0.1/700$i) 2>/dev/null; then
            break
        fi
        if ! kill -0 "$(cat "$dir/n$i.pid")" 2>/dev/null; then
            echo "n$i exited; see $dir/n$i.log" >&2
            cat "$dir/n$i.log" >&2
            exit 1
        fi
        sleep 0.1
    done
done
echo "cluster up: 127.0.0.1:7001 7002 7003, Redis Cluster clients on 7011 7012 7013 (logs in $dir, stop with scripts/cluster.sh stop)"
