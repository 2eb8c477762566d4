#!/usr/bin/env bash
# Runs Shoal's whole test suite: installs what the tests need (redis-cli from redis-tools,
# redis-server for the differential test that compares Shoal's replies with Redis's,
# memccapable from libmemcached-tools for the Memcached front end, memcached for the
# differential test that compares the Memcached port's replies with memcached's, the SASL PLAIN plugin
# (libsasl2-modules) for pylibmc's binary-protocol authentication, Python 3 and Node.js with
# the clients the cluster-client tests drive: redis-py, pymemcache and pylibmc from PyPI,
# ioredis and node-redis from npm into tests/clients/node_modules),
# checks that the fuzz target still builds on stable, then runs every workspace test.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-cli >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1 \
  || ! command -v memccapable >/dev/null 2>&1 || ! command -v memcached >/dev/null 2>&1 \
  || ! command -v chromium >/dev/null 2>&1 \
  || ! command -v openssl >/dev/null 2>&1 || ! command -v ss >/dev/null 2>&1 \
  || ! compgen -G '/usr/lib/*/sasl2/libplain.so*' >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  # chromium: the status page's test renders it headless; openssl: the TLS tests make
  # their certificates with it; iproute2's ss shows a listener's queue size.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-tools redis-server libmemcached-tools \
    memcached libsasl2-modules chromium openssl iproute2 >/dev/null
fi

if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1 \
  || ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3 python3-pip nodejs npm >/dev/null
fi
if ! python3 -c 'import redis, sys; sys.exit(int(redis.__version__.split(".")[0]) < 5)' 2>/dev/null \
  || ! python3 -c 'import pymemcache, pylibmc, prometheus_client' 2>/dev/null; then
  pkgs=('redis==8.1.0' 'pymemcache==4.0.0' 'pylibmc==1.6.3' 'prometheus-client==0.21.1')
  python3 -m pip install --quiet --disable-pip-version-check "${pkgs[@]}" \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "${pkgs[@]}"
fi
[ -d tests/clients/node_modules/ioredis ] && [ -d tests/clients/node_modules/redis ] \
  || (cd tests/clients && npm ci --silent --no-audit --no-fund)

cargo build --quiet --manifest-path fuzz/Cargo.toml --bins

# Run every test, then close with one total line (cargo's own last line is the summary of
# whichever test binary ran last, often a doc-test run with 0 tests).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --exclude shoal-sim 2>&1 | tee "$log"
# The whole-cluster simulation builds on its own: its `sim` feature swaps every crate's
# sockets for simulated ones (crates/shoal-net), and Cargo would unify it into the others.
cargo test -p shoal-sim 2>&1 | tee -a "$log"
awk '/^test result:/ { p += $4; f += $6 } END { printf "total: %d passed, %d failed\n", p, f }' "$log"
