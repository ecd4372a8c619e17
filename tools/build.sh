#!/usr/bin/env bash
# Build holdfastd and holdfastctl. Usage: tools/build.sh [release|asan] (default release)
# -> build/ or build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-release}"
case "$kind" in
  release) dir=build; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  asan)    dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=Debug -DHOLDFAST_SANITIZE=ON) ;;
  *) echo "usage: $0 [release|asan]" >&2; exit 2 ;;
esac
tools/deps-hiredis.sh # hiredis 1.2 with TLS, private prefix; a no-op once built
cmake -S . -B "$dir" -DHOLDFAST_WERROR=ON "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
