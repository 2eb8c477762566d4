#!/usr/bin/env bash
# Runs Shoal's whole test suite: installs what the tests need (redis-cli from redis-tools,
# redis-server for the differential test that compares Shoal's replies with Redis's,
# memccapable from libmemcached-tools for the Memcached front end),
# checks that the fuzz target still builds on stable, then runs every workspace test.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-cli >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1 \
  || ! command -v memccapable >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-tools redis-server libmemcached-tools >/dev/null
fi

cargo build --quiet --manifest-path fuzz/Cargo.toml --bins

# Run every test, then close with one total line (cargo's own last line is the summary of
# whichever test binary ran last, often a doc-test run with 0 tests).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace 2>&1 | tee "$log"
awk '/^test result:/ { p += $4; f += $6 } END { printf "total: %d passed, %d failed\n", p, f }' "$log"
