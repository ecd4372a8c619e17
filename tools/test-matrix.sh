#!/usr/bin/env bash
# The server matrix: the daemon's Redis-facing integration tests against
# Redis 8.6 (DELEX IFEQ) and Valkey 9.1 (DELIFEQ), built from Debian's source
# packages by tools/build-servers.sh (cached between runs). Debian 12's Redis
# 7.0 runs the whole integration suite in tools/test-all.sh already, which
# runs this for Redis 8.6 (tools/test-matrix.sh redis); the whole matrix is
# this command without arguments.
# Usage: tools/test-matrix.sh [redis] [valkey]   (after tools/build.sh release)
# Prints one pytest summary per server and a closing "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/bin:$PATH" # Debian's python3 carries python3-protobuf and pytest

mapfile -t servers < <(tools/build-servers.sh "$@") || { echo "test-matrix: no servers" >&2; exit 1; }
[ "${#servers[@]}" -ge 1 ] || { echo "test-matrix: build-servers.sh gave no binaries" >&2; exit 1; }
tests=(tests/test_holds.py tests/test_delex.py tests/test_redis_failures.py tests/test_cluster.py
       tests/test_protocol.py tests/test_hostile.py tests/test_segments.py tests/test_confirm.py
       tests/test_lifecycle.py)
passed=0 failed=0
for server in "${servers[@]}"; do
  echo "== $("$server" --version | cut -d' ' -f1-3)"
  if env REDIS_SERVER="$server" HOLDFASTD="$PWD/build/daemon/holdfastd" \
      /usr/bin/python3 -m pytest -q "${tests[@]}"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
done
echo "matrix: $passed passed, $failed failed"
[ "$failed" = 0 ]
