#!/usr/bin/env bash
# A gossip-mode cluster on one machine: nodes find each other through a seed, keys move as
# nodes join and leave.
#
#   scripts/gossip.sh             build shoald (release) and start g1..g3 on 127.0.0.1:7101-7103
#   scripts/gossip.sh add N       start node gN on 127.0.0.1:(7100+N) and join it (scale out)
#   scripts/gossip.sh leave N     SIGTERM gN: it hands its slots over, leaves and exits
#   scripts/gossip.sh stop        SIGTERM every node started here
#
# Node gN serves RESP on 7100+N, Redis Cluster clients on 7110+N (cluster-client-port, so
# gN for N >= 10 would collide: add at most g4..g9), and uses 17100+N for the inter-node
# protocol (TCP) and gossip (UDP); g1..g3 are every node's seeds, so any of them can restart and find the others (a
# node never serves as a cluster of one by accident: g1..g3 start together and form the
# cluster once they see each other). The nodes share SHOAL_CLUSTER_SECRET (a random one is made and kept
# in target/gossip/secret when unset). Logs and pids go to target/gossip/.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/gossip
mkdir -p "$dir"
if [[ -z "${SHOAL_CLUSTER_SECRET:-}" ]]; then
    [[ -f "$dir/secret" ]] || head -c 24 /dev/urandom | base64 >"$dir/secret"
    SHOAL_CLUSTER_SECRET="$(cat "$dir/secret")"
fi
export SHOAL_CLUSTER_SECRET

seeds=127.0.0.1:17101,127.0.0.1:17102,127.0.0.1:17103

launch() {
    local n=$1 port=$((7100 + $1))
    target/release/shoald --port "$port" --set cluster-mode=gossip --set "node-name=g$n" \
        --set "cluster-port=$((17100 + n))" --set "cluster-seeds=$seeds" \
        --set "cluster-client-port=$((7110 + n))" \
        >"$dir/g$n.log" 2>&1 &
    echo $! >"$dir/g$n.pid"
}

wait_serving() {
    local n=$1 port=$((7100 + $1))
    # Ready when it serves (bounded wait).
    for _ in $(seq 1 300); do
        if redis-cli -p "$port" INFO cluster 2>/dev/null | grep -q '^shoal_state:serving'; then
            echo "g$n serving on 127.0.0.1:$port"
            return 0
        fi
        if ! kill -0 "$(cat "$dir/g$n.pid")" 2>/dev/null; then
            echo "g$n exited; see $dir/g$n.log" >&2
            cat "$dir/g$n.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "g$n did not reach the serving state within 30 s; see $dir/g$n.log" >&2
    exit 1
}

stop() {
    local pidfile="$dir/g$1.pid"
    [[ -f "$pidfile" ]] || return 0
    local pid
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    # Bounded wait for the hand-off and exit.
    for _ in $(seq 1 900); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    rm -f "$pidfile"
    echo "g$1 left"
}

case "${1:-start}" in
start)
    cargo build --release -q -p shoald
    for n in 1 2 3; do launch "$n"; done
    for n in 1 2 3; do wait_serving "$n"; done
    ;;
add)
    launch "$2"
    wait_serving "$2"
    ;;
leave) stop "$2" ;;
stop)
    for f in "$dir"/g*.pid; do
        [[ -e "$f" ]] || continue
        n=$(basename "$f" .pid)
        stop "${n#g}"
    done
    ;;
*)
    echo "usage: $0 [start | add N | leave N | stop]" >&2
    exit 2
    ;;
esac
