#!/usr/bin/env bash
# Benchmarks, each reported as a ratio against a baseline measured in the same
# run on the same private Redis:
#   1. Hold through holdfastd vs the same Redis function called directly
#      (hiredis, same connections and pipeline depth).
#   2. redis-benchmark SET with the same shape, for scale.
# Usage: bench/run.sh [holds] (default 200000). Numbers depend on the machine;
# only the ratios travel.
set -euo pipefail
cd "$(dirname "$0")/.."
holds="${1:-200000}"
tools/build.sh release >/dev/null
dir="$(mktemp -d /tmp/hf-bench.XXXXXX)"
trap 'tools/devstack.sh down "$dir" >/dev/null; rm -rf "$dir"' EXIT
# The dev stack logs at info: one line per request is part of the real cost.
tools/devstack.sh up "$dir" >/dev/null
echo "== holdfastd (log level info: one line per request)"
build/bench/bench_hold --socket "$dir/holdfast.sock" --redis "$dir/redis.sock" --holds "$holds"
echo "== redis-benchmark SET, same connections and pipeline depth"
redis-benchmark -s "$dir/redis.sock" -t set -n "$holds" -c 4 -P 32 --csv | tail -1
