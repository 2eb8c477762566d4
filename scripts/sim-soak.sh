#!/usr/bin/env bash
# Soak of the whole-cluster simulation: seeds FROM..TO (default 0..1000), each in its own
# process, with the fault set FAULTS (all, crashes, network, gray, isolated-tcp, scale or link-cut;
# default all; SHOAL_SIM_SKEW_MS and SHOAL_SIM_CLIENT_NODES apply). Prints each
# seed's result and, for a failing one, its faults and what the checker found. Replay one:
#   SHOAL_SIM_SEED=<seed> SHOAL_SIM_FAULTS=<faults> cargo test --release -p shoal-sim -- --ignored --exact one_seed --nocapture
set -euo pipefail
cd "$(dirname "$0")/.."
from=${1:-0}
to=${2:-1000}
SHOAL_SIM_SEEDS="$from..$to" SHOAL_SIM_FAULTS="${3:-all}" \
  cargo test --release -p shoal-sim -- --ignored --exact soak --nocapture
