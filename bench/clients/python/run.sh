#!/usr/bin/env bash
# The Python client's hold+release pairs/s against redis-py's Lock
# (acquire(blocking=False) + release), on one private stack, in one run.
#   bench/clients/python/run.sh [SECONDS=5] [ROUNDS=3]
# Runs from anywhere; builds the daemon (tools/build.sh release) if it is not
# built; installs redis-py (pinned) and protobuf into build/bench-clients-py/venv.
# Shapes (those of the shared yardsticks py_holdfast.py / py_redis_lock.py,
# copied here unchanged): 1 and 16 threads, distinct ids per thread; holdfast:
# one shared Client (one multiplexed connection); redis-py: one shared
# redis.Redis (its connection pool). Contenders run alternately, ROUNDS times.
# Each run's line gets the client process's CPU per pair (cpu.py).
# BASELINE_SRC=<dir with holdfast/> adds a third contender: another copy of the
# client (e.g. main's clients/python/src), measured in the same rounds.
# Prints one line per run, then a table of medians, then "ratio_seq X" and
# "ratio_16 Y" (holdfast / redis-py, for bench/run.sh --clients).
set -euo pipefail
S=${1:-5}; R=${2:-3}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
work="$root/build/bench-clients-py"
REDIS_PY=7.4.0
PROTOBUF=7.36.2
THREADS="1 16"
N=100000000 # pairs per thread: the run is bounded by SECONDS

if [[ ! -x "$root/build/daemon/holdfastd" ]]; then
  echo "== building holdfastd (tools/build.sh release)" >&2
  bash "$root/tools/build.sh" release >"$work.build.log" 2>&1 || { tail -40 "$work.build.log"; exit 1; }
fi
mkdir -p "$work"
py="$work/venv/bin/python"
if ! [[ -x "$py" ]] || ! "$py" -c "import redis, google.protobuf as p, sys; sys.exit(redis.__version__ != '$REDIS_PY' or p.__version__ != '$PROTOBUF')" 2>/dev/null; then
  python3 -m venv "$work/venv"
  "$py" -m pip install -q --disable-pip-version-check "redis==$REDIS_PY" "protobuf==$PROTOBUF"
fi

stack="$(mktemp -d /tmp/hf-benchpy-XXXXXX)" # short: socket paths max 107 bytes
out="$(mktemp /tmp/hf-benchpy-out-XXXXXX)"
cleanup() { bash "$root/tools/devstack.sh" down "$stack" >/dev/null 2>&1 || true; rm -rf "$stack" "$out"; }
trap cleanup EXIT
bash "$root/tools/devstack.sh" up "$stack" >/dev/null

run_hf() { # run_hf LABEL SRC THREADS
  echo "client=$1 $(PYTHONPATH="$2" "$py" "$here/cpu.py" "$here/py_holdfast.py" "$stack/holdfast.sock" "$3" "$N" "$S")"
}
for round in $(seq "$R"); do
  for t in $THREADS; do
    run_hf holdfast "$root/clients/python/src" "$t" | tee -a "$out"
    echo "client=redis-py $("$py" "$here/cpu.py" "$here/py_redis_lock.py" "unix:$stack/redis.sock" lock "$t" "$N" "$S")" | tee -a "$out"
    if [[ -n "${BASELINE_SRC:-}" ]]; then run_hf baseline "$BASELINE_SRC" "$t" | tee -a "$out"; fi
  done
  redis-cli -s "$stack/redis.sock" FLUSHALL >/dev/null
done

"$py" - "$out" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    if "client" in f:
        runs.setdefault((f["client"], f["threads"]), []).append(f)
med = statistics.median
clients = [c for c in ("holdfast", "baseline") if any(k[0] == c for k in runs)]
ratios = {}
print()
print("threads | client   | pairs/s | p50 us | redis-py pairs/s | p50 us | pairs/s ratio | per round       | p50 ratio | client CPU us/pair (redis-py)")
for t in ("1", "16"):
    rp = runs.get(("redis-py", t))
    if not rp:
        continue
    for c in clients:
        rs = runs.get((c, t))
        if not rs:
            continue
        # Rounds pair up in order: each ratio compares runs made moments apart.
        per = [float(a["pairs_per_s"]) / float(b["pairs_per_s"]) for a, b in zip(rs, rp)]
        if c == "holdfast":
            ratios[t] = med(per)
        hp, rpp = (med(float(r["pairs_per_s"]) for r in x) for x in (rs, rp))
        hl, rl = (med(float(r["p50_us"]) for r in x) for x in (rs, rp))
        print(f"{t:>7} | {c:<8} | {hp:>7.0f} | {hl:>6.0f} | {rpp:>16.0f} | {rl:>6.0f} | "
              f"{med(per):>13.2f} | {','.join(f'{x:.2f}' for x in per):<15} | {hl / rl:>9.2f} | "
              f"{med(float(r['cpu_us_per_pair']) for r in rs):.0f} "
              f"({med(float(r['cpu_us_per_pair']) for r in rp):.0f})")
print("(medians of the rounds; ratio = holdfast / redis-py Lock: the median of the rounds'")
print(" ratios, each from runs moments apart on the same stack; p50 ratio: of the medians;")
print(" client CPU: user+system of the benchmark process per pair, the least noisy figure)")
# For bench/run.sh --clients: holdfast / redis-py, 1 and 16 threads.
for t, key in (("1", "ratio_seq"), ("16", "ratio_16")):
    if t in ratios:
        print(f"{key} {ratios[t]:.2f}")
PY
