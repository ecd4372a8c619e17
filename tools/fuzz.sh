#!/usr/bin/env bash
# Build the libFuzzer targets with clang and run each for a while.
# Usage: tools/fuzz.sh [seconds per target] (default 20). Seeds: the golden
# frames in protos/testdata and daemon/tests/fuzz/corpus_config.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
CC=clang cmake -S . -B build-fuzz -DHOLDFAST_FUZZ=ON -DHOLDFAST_WERROR=ON \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_frame fuzz_config
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/frame" "$work/config"
cp protos/testdata/*.bin "$work/frame/" 2>/dev/null || true
cp daemon/tests/fuzz/corpus_config/* "$work/config/"
build-fuzz/daemon/tests/fuzz_frame -max_total_time="$seconds" -max_len=8192 \
  -artifact_prefix="$work/" "$work/frame" 2>&1 | tail -1
build-fuzz/daemon/tests/fuzz_config -max_total_time="$seconds" -max_len=4096 -timeout=10 \
  -artifact_prefix="$work/" "$work/config" 2>&1 | tail -1
