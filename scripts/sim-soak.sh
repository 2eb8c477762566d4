#!/usr/bin/env bash
# Soak of the whole-cluster simulation: runs seeds FROM..TO (default 0..1000) with every
# fault (SHOAL_SIM_FAULTS=network|crashes for the smaller sets), prints each seed's result
# and, for a failing one, its faults and what the checker found. Replay one seed with
#   SHOAL_SIM_SEEDS=<seed>..<seed+1> cargo test --release -p shoal-sim -- --ignored soak --nocapture
set -euo pipefail
cd "$(dirname "$0")/.."
from=${1:-0}
to=${2:-1000}
SHOAL_SIM_SEEDS="$from..$to" cargo test --release -p shoal-sim -- --ignored soak --nocapture
