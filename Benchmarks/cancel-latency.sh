#!/usr/bin/env bash
# How soon an open blocked on a server that never answers returns once cancelled, and once its 0.3 s open time limit
# passes: Benchmarks/CancelLatency (see its header), release build, RUNS runs of each (default 20).
#
#   bash Benchmarks/cancel-latency.sh [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
(cd "$root/Benchmarks" && swift build -c release --product CancelLatency >/dev/null 2>&1)
"$(cd "$root/Benchmarks" && swift build -c release --show-bin-path 2>/dev/null)/CancelLatency" "${1:-20}"
