#!/usr/bin/env bash
# Reproduces the README's performance tables: builds shoald --release, starts it on free
# loopback ports, and runs the team's yardstick against it, which starts its own reference
# server and compares the two, interleaved, on the same machine:
#   scripts/bench.sh            RESP: ../shared/bench/resp-bench.sh against redis-server
#   scripts/bench.sh memcache   Memcached protocol: ../shared/bench/memcache-bench.sh against
#                               memcached (needs memcached and libmemcached-tools)
#   scripts/bench.sh cluster    the cluster data path: resp-bench against a single node, then
#                               against node n0 of a 3-node cluster (replicas = 1, so two thirds
#                               of the requests are forwarded and every write is replicated),
#                               with the CPU of all three nodes summed (CANDIDATE_PID list)
#   scripts/bench.sh cluster-memcache
#                               the same for the Memcached protocol: memcache-bench against a
#                               single node's Memcached port, then against n0's, CPU of all
#                               three nodes summed
#   scripts/bench.sh cluster-clients
#                               Redis Cluster clients: redis-benchmark --cluster against the
#                               cluster-client ports of a 3-node cluster (each request goes
#                               straight to its owner; replicas = 1) and plain redis-benchmark
#                               against a single node, interleaved rounds; prints server CPU
#                               per request (all three nodes summed) and its ratio
#                               (knobs: ROUNDS=3 REQUESTS=300000 KEYSPACE=100000 CLIENTS=50)
#   scripts/bench.sh metrics    the metrics endpoint's cost: resp-bench with shoald in both
#                               seats, metrics-port on and scraped every second against off
#   scripts/bench.sh lrange     LRANGE mylist 0 99 against redis-server (scripts/lrange-bench.py;
#                               resp-bench cannot run redis-benchmark's lrange_100 test)
#   scripts/bench.sh ab         two shoald settings or builds against each other: resp-bench
#                               with shoald in both seats, the candidate started with A_ARGS,
#                               the reference seat (redis-server's) with B_ARGS, from the
#                               binary B_SHOALD (default the same); ratios are A over B,
#                               e.g. A_ARGS="--set threads=1" B_ARGS="" scripts/bench.sh ab
# Tune the yardsticks with their environment knobs (ROUNDS, SECS, CLIENTS, VSIZE, MEM_KEYS...).
# CLUSTER_THREADS=n gives each cluster node n worker threads (`threads`; default one per core,
# so three nodes on a small machine oversubscribe it); the single node keeps the default.
# SHOALD=path runs that binary instead of building one (to compare two builds, e.g. a copy of
# the release binary made before a change against the one after).
set -euo pipefail
cd "$(dirname "$0")/.."
SHOALD=${SHOALD:-}
build() { [ -n "$SHOALD" ] || { cargo build --release -p shoald; SHOALD=./target/release/shoald; }; }
start_node() { # log-file args... -> pid in $started
  "$SHOALD" "${@:2}" 2>"$1" &
  started=$!
}
wait_addr() { # log-file pattern pid -> address on stdout
  local a=""
  for _ in $(seq 1 100); do
    a=$(grep -o "$2" "$1" | head -1 | grep -o '127\.0\.0\.1:[0-9]*' || true)
    [ -n "$a" ] && { echo "$a"; return 0; }
    kill -0 "$3" 2>/dev/null || { cat "$1" >&2; return 1; }
    sleep 0.1
  done
  cat "$1" >&2; return 1
}
# Starts a 3-node static cluster (n0..n2, each with a cluster-client port) and a single node
# on free loopback ports: pids in $pids (n0 n1 n2 single), the RESP ports in $p0..$p2, the
# cluster-client ports in $k0..$k2, the single node's address in $single, its pid $single_pid;
# the Memcached addresses of n0 and of the single node in $mc0 and $mc_single.
start_cluster_and_single() {
  build
  tmp=$(mktemp -d)
  pids=()
  trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
  local ports
  ports=$(python3 -c 'import socket
s=[socket.socket() for _ in range(9)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')
  read -r p0 c0 k0 p1 c1 k1 p2 c2 k2 <<<"$ports"
  local nodes="n0=127.0.0.1:$p0@$c0+$k0,n1=127.0.0.1:$p1@$c1+$k1,n2=127.0.0.1:$p2@$c2+$k2"
  export SHOAL_CLUSTER_SECRET=bench-cluster-secret-0123
  for i in 0 1 2; do
    eval "port=\$p$i"
    start_node "$tmp/n$i.log" --port "$port" --memcache-port 0 --maxmemory 0 --set "node-name=n$i" --set "cluster-nodes=$nodes" \
      ${CLUSTER_THREADS:+--set "threads=$CLUSTER_THREADS"}
    pids+=("$started")
  done
  for i in 0 1 2; do wait_addr "$tmp/n$i.log" 'Redis Cluster clients listening on 127\.0\.0\.1:[0-9]*' "${pids[$i]}" >/dev/null; done
  start_node "$tmp/single.log" --port 0 --memcache-port 0 --maxmemory 0
  single_pid=$started; pids+=("$single_pid")
  single=$(wait_addr "$tmp/single.log" 'listening on 127\.0\.0\.1:[0-9]*' "$single_pid")
  local mc='memcached protocol listening on 127\.0\.0\.1:[0-9]*'
  mc0=$(wait_addr "$tmp/n0.log" "$mc" "${pids[0]}")
  mc_single=$(wait_addr "$tmp/single.log" "$mc" "$single_pid")
}
if [ "${1:-resp}" = cluster-clients ]; then
  start_cluster_and_single
  SINGLE="$single" SINGLE_PID="$single_pid" CLUSTER_PORT="$k0" \
    CLUSTER_PIDS="${pids[0]},${pids[1]},${pids[2]}" python3 - <<'PY'
import os, subprocess, statistics, time
rounds = int(os.environ.get("ROUNDS", "3"))
n = int(os.environ.get("REQUESTS", "300000"))
keyspace = int(os.environ.get("KEYSPACE", "100000"))
clients = os.environ.get("CLIENTS", "50")
host, sport = os.environ["SINGLE"].rsplit(":", 1)
targets = {
    "single": (["-p", sport], [int(os.environ["SINGLE_PID"])]),
    "cluster": (["--cluster", "-p", os.environ["CLUSTER_PORT"]],
                [int(p) for p in os.environ["CLUSTER_PIDS"].split(",")]),
}
tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
def cpu(pids):
    t = 0
    for p in pids:
        f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        t += int(f[11]) + int(f[12])
    return t * tick_us
def bench(target, test, pipe, count):
    args, pids = targets[target]
    c0, t0 = cpu(pids), time.monotonic()
    subprocess.run(["timeout", "120", "redis-benchmark", "-h", host, *args, "-t", test,
                    "-c", clients, "-P", str(pipe), "-n", str(count), "-r", str(keyspace),
                    "-d", "100", "-q"], check=True, capture_output=True)
    return (cpu(pids) - c0) / count, count / (time.monotonic() - t0)
for t in targets:
    bench(t, "set", 16, keyspace)  # preload
print(f"{'workload':<12} {'single us/op':>12} {'cluster us/op':>13} {'cpu ratio':>9}  {'rps ratio':>9}")
for test, pipe in (("get", 1), ("set", 1), ("get", 16), ("set", 16)):
    res = {"single": [], "cluster": []}
    for r in range(rounds):
        order = ["single", "cluster"] if r % 2 == 0 else ["cluster", "single"]
        for t in order:
            res[t].append(bench(t, test, pipe, n))
    med = {t: (statistics.median(u for u, _ in v), statistics.median(q for _, q in v)) for t, v in res.items()}
    print(f"{test}:{clients}:{pipe:<6} {med['single'][0]:>12.2f} {med['cluster'][0]:>13.2f} "
          f"{med['cluster'][0] / med['single'][0]:>9.2f}  {med['cluster'][1] / med['single'][1]:>9.2f}")
PY
  exit 0
fi
if [ "${1:-resp}" = cluster ] || [ "${1:-resp}" = cluster-memcache ]; then
  start_cluster_and_single
  if [ "$1" = cluster ]; then
    BENCH=${RESP_BENCH:-../shared/bench/resp-bench.sh}; one=$single; n0="127.0.0.1:$p0"
  else
    BENCH=${MEMCACHE_BENCH:-../shared/bench/memcache-bench.sh}; one=$mc_single; n0=$mc0
  fi
  [ -f "$BENCH" ] || { echo "bench: $BENCH not found"; exit 2; }
  echo "== single node ($one)"
  CANDIDATE_PID=$single_pid bash "$BENCH" "$one"
  echo "== node n0 of a 3-node cluster ($n0), CPU of all three nodes summed"
  CANDIDATE_PID="${pids[0]},${pids[1]},${pids[2]}" bash "$BENCH" "$n0"
  exit 0
fi
# Writes $tmp/reference: a stand-in for redis-server (it takes resp-bench's --port) that
# runs the shoald binary $1 with the arguments $2 (split on spaces).
reference_wrapper() {
  cat >"$tmp/reference" <<WRAP
#!/usr/bin/env bash
port=6379
while [ \$# -gt 0 ]; do
  case "\$1" in
    --port) port=\$2; shift 2 ;;
    --version) echo "shoald v=reference-seat"; exit 0 ;;
    *) shift ;;
  esac
done
exec "$1" --port "\$port" --maxmemory 0 $2
WRAP
  chmod +x "$tmp/reference"
}
if [ "${1:-resp}" = lrange ]; then
  build
  exec python3 scripts/lrange-bench.py "$SHOALD"
fi
if [ "${1:-resp}" = ab ]; then
  build
  BENCH=${RESP_BENCH:-../shared/bench/resp-bench.sh}
  [ -f "$BENCH" ] || { echo "bench: $BENCH not found"; exit 2; }
  tmp=$(mktemp -d)
  SHOALD=$(realpath "$SHOALD")
  reference_wrapper "$(realpath "${B_SHOALD:-$SHOALD}")" "${B_ARGS:-}"
  # shellcheck disable=SC2086
  start_node "$tmp/candidate.log" --port 0 --maxmemory 0 ${A_ARGS:-}
  pid=$started
  trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
  addr=$(wait_addr "$tmp/candidate.log" 'listening on 127\.0\.0\.1:[0-9]*' $pid)
  echo "== candidate: $SHOALD ${A_ARGS:-}; reference seat: ${B_SHOALD:-$SHOALD} ${B_ARGS:-}"
  REDIS_SERVER="$tmp/reference" CANDIDATE_PID=$pid bash "$BENCH" "$addr"
  exit 0
fi
if [ "${1:-resp}" = metrics ]; then
  # The metrics endpoint's cost: resp-bench with shoald in both seats, the candidate with
  # metrics-port on and scraped every second, the reference without a metrics port. The
  # ratios are with/without.
  build
  BENCH=${RESP_BENCH:-../shared/bench/resp-bench.sh}
  [ -f "$BENCH" ] || { echo "bench: $BENCH not found"; exit 2; }
  tmp=$(mktemp -d)
  SHOALD=$(realpath "$SHOALD")
  reference_wrapper "$SHOALD" ""
  start_node "$tmp/candidate.log" --port 0 --maxmemory 0 --set metrics-port=0
  pid=$started
  trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
  addr=$(wait_addr "$tmp/candidate.log" 'listening on 127\.0\.0\.1:[0-9]*' $pid)
  maddr=$(wait_addr "$tmp/candidate.log" 'http://127\.0\.0\.1:[0-9]*/metrics' $pid)
  # One scrape a second (Prometheus scrapes every 15 s by default), at most for an hour.
  python3 - "$maddr" "$pid" <<'PY' &
import os, sys, time, urllib.request
addr, pid = sys.argv[1], int(sys.argv[2])
for _ in range(3600):
    try:
        os.kill(pid, 0)
        urllib.request.urlopen(f"http://{addr}/metrics", timeout=5).read()
    except (OSError, ValueError):
        break
    time.sleep(1)
PY
  echo "== candidate: metrics-port on, scraped every second; reference: no metrics port"
  REDIS_SERVER="$tmp/reference" CANDIDATE_PID=$pid bash "$BENCH" "$addr"
  exit 0
fi
case "${1:-resp}" in
  resp) BENCH=${RESP_BENCH:-../shared/bench/resp-bench.sh}; pattern='listening on 127\.0\.0\.1:[0-9]*' ;;
  memcache) BENCH=${MEMCACHE_BENCH:-../shared/bench/memcache-bench.sh}; pattern='memcached protocol listening on 127\.0\.0\.1:[0-9]*' ;;
  *) echo "usage: $0 [resp|memcache|cluster|cluster-memcache|cluster-clients|metrics|ab|lrange]"; exit 2 ;;
esac
[ -f "$BENCH" ] || { echo "bench: $BENCH not found"; exit 2; }

build
log=$(mktemp)
"$SHOALD" --port 0 --memcache-port 0 --maxmemory 0 2>"$log" &
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
