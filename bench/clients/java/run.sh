#!/usr/bin/env bash
# The Java client against Redisson: hold + release pairs/s (RLock tryLock(0,
# lease) + unlock), 1 and 16 threads, on one private stack started here.
#   bench/clients/java/run.sh [--seconds S] [--rounds R]
# Builds holdfastd when missing (tools/build.sh release), installs the client
# from clients/java into the local Maven repository, builds this project and
# runs dev.holdfast.bench.PairsBench. Ends with "ratio_seq X" and "ratio_16 Y"
# (read by bench/run.sh --clients).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
seconds=5 rounds=3 warmup=3
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    *) echo "usage: $0 [--seconds S] [--rounds R] [--warmup S]" >&2; exit 2 ;;
  esac
done

bash "$root/tools/deps-clients-go-java.sh"
if [[ ! -x "${HOLDFASTD:-$root/build/daemon/holdfastd}" ]]; then
  echo "== building holdfastd"
  bash "$root/tools/deps.sh" >/dev/null && bash "$root/tools/build.sh" release >/dev/null
fi

logs="$(mktemp -d)"
stack="$(mktemp -d /tmp/hf-benchjava-XXXXXX)" # short: socket paths max 107 bytes
cleanup() {
  bash "$root/tools/devstack.sh" down "$stack" >/dev/null 2>&1 || true
  rm -rf "$stack" "$logs"
}
trap cleanup EXIT

echo "== installing the client (clients/java) and building the benchmark"
(cd "$root/clients/java" && mvn -B -ntp -q install -Dmaven.test.skip=true -Dmaven.javadoc.skip=true \
  -Dmaven.source.skip=true) >"$logs/install.log" 2>&1 || { tail -40 "$logs/install.log"; exit 1; }
(cd "$here" && mvn -B -ntp -q package dependency:build-classpath \
  -Dmdep.outputFile="$logs/cp.txt") >"$logs/build.log" 2>&1 || { tail -40 "$logs/build.log"; exit 1; }

bash "$root/tools/devstack.sh" up "$stack" >"$logs/stack.log" 2>&1 \
  || { cat "$logs/stack.log"; tail -20 "$stack/holdfastd.log" 2>/dev/null; exit 1; }

echo "== holdfast Java client vs Redisson: ${rounds} rounds of ${seconds} s, 1 and 16 threads"
java -Xms256m -Xmx1g \
  -cp "$here/target/classes:$(cat "$logs/cp.txt")" dev.holdfast.bench.PairsBench \
  "$stack/holdfast.sock" "$stack/redis.sock" "$seconds" "$rounds" "$warmup" 2>"$logs/stderr.log" \
  || { tail -40 "$logs/stderr.log"; exit 1; }
