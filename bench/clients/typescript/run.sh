#!/usr/bin/env bash
# holdfast's TypeScript client vs node-redlock (redlock 5 beta + ioredis):
# hold+release pairs/s, sequentially and with 16 in flight, alternately on one
# private stack (tools/devstack.sh), 3 rounds of ~5 s each. The last lines
# are a table of medians with the ratios holdfast / redlock; just before it,
# "ratio_seq X" and "ratio_16 Y" lines for bench/run.sh --clients.
# Usage: bench/clients/typescript/run.sh [bench.mjs options, e.g. --seconds 2 --rounds 1,
#        or --before OTHER/clients/typescript/dist/src/index.js: another build of
#        the client measured in the same rounds]
# Builds the daemon (tools/build.sh release) when it is not built, and the
# client (clients/typescript: npm ci when needed, npm run build). Numbers
# depend on the machine; only the ratios travel.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cd "$root"
if [[ ! -x "${HOLDFASTD:-build/daemon/holdfastd}" ]]; then
  echo "== building holdfastd (tools/build.sh release)"
  tools/build.sh release >/dev/null
fi
(
  cd clients/typescript
  [[ -d node_modules/@bufbuild/protobuf ]] || npm ci --no-audit --no-fund --loglevel=error
  npm run --silent build
)
(
  cd "$here"
  [[ -d node_modules/redlock && -d node_modules/ioredis ]] || npm ci --no-audit --no-fund --loglevel=error
)
dir="$(mktemp -d /tmp/hf-tsbench.XXXXXX)" # short: socket paths max 107 bytes
trap 'tools/devstack.sh down "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
tools/devstack.sh up "$dir" >/dev/null
echo "node $(node --version), $(nproc) cores; holdfastd $(cat "$dir/holdfastd.pid"), redis-server $(cat "$dir/redis.pid")"
# For scale: the same pairs from the C bench client (bench/bench_pairs, no
# client cost to speak of), through holdfastd and straight to Redis the way
# lock libraries do it (SET NX PX + compare-and-delete script).
if [[ -x build/bench/bench_pairs ]]; then
  echo "== C client (bench/bench_pairs), 1 connection, 1 and 16 in flight, 2 s each"
  for k in 1 16; do
    build/bench/bench_pairs daemon "$dir/holdfast.sock" 1 "$k" 2 || true
    build/bench/bench_pairs setnx "$dir/redis.sock" 1 "$k" 2 || true
  done
fi
echo "== TypeScript: hold+release pairs"
node "$here/bench.mjs" --socket "$dir/holdfast.sock" --redis "$dir/redis.sock" \
  --pids "$(cat "$dir/holdfastd.pid"),$(cat "$dir/redis.pid")" "$@"
