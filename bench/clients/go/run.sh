#!/usr/bin/env bash
# The Go client against redsync (go-redsync v4 on go-redis v9), on one
# private stack: hold+release pairs/s with 1 and with 16 goroutines sharing
# one client, interleaved rounds. Run from anywhere:
#   bench/clients/go/run.sh [SECONDS=5] [ROUNDS=3] [GOROUTINES=1,16]
# Builds the daemon (tools/build.sh release) if it is missing, starts a stack
# with tools/devstack.sh, prints one line per run and ends with a table of
# medians: pairs/s, p50 of a pair in us, and the holdfast/redsync ratio (the
# median of the per-round ratios).
set -euo pipefail
S=${1:-5}; R=${2:-3}; G=${3:-1,16}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cd "$root"
if [[ ! -x "${HOLDFASTD:-$root/build/daemon/holdfastd}" ]]; then
  echo "== building holdfastd (tools/build.sh release)" >&2
  bash tools/deps.sh >/dev/null && bash tools/build.sh release >/dev/null
fi
bin="$(mktemp -d /tmp/hf-gobench-bin.XXXXXX)"
dir="$(mktemp -d /tmp/hf-gobench.XXXXXX)" # short: socket paths max 107 bytes
cleanup() { bash "$root/tools/devstack.sh" down "$dir" >/dev/null 2>&1 || true; rm -rf "$dir" "$bin"; }
trap cleanup EXIT
(cd "$here" && go build -o "$bin/gobench" .)
bash tools/devstack.sh up "$dir" >/dev/null
"$bin/gobench" -holdfast "$dir/holdfast.sock" -redis "$dir/redis.sock" -seconds "$S" -rounds "$R" -goroutines "$G"
