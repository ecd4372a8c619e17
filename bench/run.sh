#!/usr/bin/env bash
# Benchmarks, each a ratio against a baseline measured in the same run on the
# same private servers (tools/devstack.sh; request logging on, as shipped).
# Only the ratios travel between machines.
#
#   1. Pairs (hold -> release), bench_pairs, C connections x K in flight,
#      through holdfastd vs straight to Redis: the lock libraries' way (SET NX
#      PX + compare-and-delete script) and the daemon's own functions (FCALL
#      hf1_hold / hf1_release). Rounds interleave the three; medians. At 1x1
#      and 64x1 the straight modes also run through bench/hop_proxy (a
#      process that only forwards bytes): the floor of any hop. 1x1 runs once
#      more with loop.busy_poll_us = 50 (reloaded in place, then put back).
#   2. Confirm: holdfast.confirm() vs the minimal correct claim transaction
#      (idempotency row + claim row, ON CONFLICT DO NOTHING), pgbench, 1 and 4
#      clients; and Hold + Confirm through holdfastd (4 connections, 1 and 16
#      in flight) vs pgbench of the same holdfast.confirm() call.
#   3. Pool holds and segment holds vs seat holds, through holdfastd; and
#      waiting in line: release -> the waiter's grant (p50/p99) vs a plain
#      Hold's round trip, one round at a time (bench_hold --wakeup).
#   4. Memory, measured first: idle RSS, and RSS per idle connection (200
#      connections, each answered once: the default
#      limits.max_connections_per_uid is 256).
#   5. The clients against their peers (bench/clients/<language>/run.sh, each
#      with its own stack), when asked for: bench/run.sh --clients.
# Ends with one table: every goal of issue 15, what was measured, met or not.
#
# Usage: bench/run.sh [--seconds S] [--rounds R] [--clients]
#   defaults: 5 s per run, 3 rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=5 rounds=3 clients=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --clients) clients=1; shift ;;
    *) echo "usage: bench/run.sh [--seconds S] [--rounds R] [--clients]" >&2; exit 2 ;;
  esac
done
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
tools/build.sh release >/dev/null
dir="$(mktemp -d /tmp/hf-bench.XXXXXX)"
results="$dir/results"
trap 'tools/devstack.sh down "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
tools/devstack.sh up "$dir" >/dev/null
: >"$results"
note() { echo "$1" >>"$results"; } # "key value" lines for the table

echo "== 0. memory, first (later runs leave malloc's free lists full): idle RSS, and per idle connection"
pid=$(cat "$dir/holdfastd.pid" 2>/dev/null || pgrep -f "holdfastd --config $dir/holdfast.lua" | head -1)
python3 - "$dir/holdfast.sock" "$pid" >>"$results" <<'PY'
import socket, sys, time
path, pid = sys.argv[1], sys.argv[2]
def rss_kib():
    for line in open("/proc/%s/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
idle = rss_kib()
conns = []
# A Health request on each: the daemon has accepted it and set it up.
health = bytes.fromhex("00000003") + bytes.fromhex("820100")
for _ in range(200):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(health)
    conns.append(s)
for s in conns:
    s.recv(65536)
time.sleep(0.5)
per = (rss_kib() - idle) * 1024 / len(conns)
print("idle_rss_mib %.1f" % (idle / 1024))
print("per_conn_bytes %.0f" % per)
for s in conns:
    s.close()
PY

echo "== 1. pairs: holdfastd vs SET NX + script vs FCALL direct ($rounds rounds of ${seconds} s)"
# The floor of any hop: at 1x1 and 64x1 the straight modes run once more
# through bench/hop_proxy, which only forwards bytes between each client and
# a Redis connection of its own. What it adds is what one more process on the
# path costs on this machine, whatever that process does.
build/bench/hop_proxy "$dir/hop.sock" "$dir/redis.sock" &
hop_pid=$!
trap 'kill $hop_pid 2>/dev/null; tools/devstack.sh down "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
for _ in $(seq 50); do [ -S "$dir/hop.sock" ] && break; sleep 0.1; done
pairs() { # via mode socket C K
  build/bench/bench_pairs "$2" "$3" "$4" "$5" "$seconds" | sed "s/^/via=$1 /" | tee -a "$dir/pairs"
}
for round in $(seq "$rounds"); do
  for shape in "1 1" "1 16" "1 64" "64 1" "16 4"; do
    pairs daemon daemon "$dir/holdfast.sock" $shape
    for mode in setnx fcall; do
      pairs direct "$mode" "$dir/redis.sock" $shape
      case "$shape" in "1 1" | "64 1") pairs hop "$mode" "$dir/hop.sock" $shape ;; esac
    done
  done
  redis-cli -s "$dir/redis.sock" FLUSHALL >/dev/null
done
# The 1x1 shape again with loop.busy_poll_us = 50 (reloaded in place; the
# default, 0, is put back for what follows).
cp "$dir/holdfast.lua" "$dir/holdfast.lua.default"
sed 's/busy_poll_us = [0-9]*/busy_poll_us = 50/' "$dir/holdfast.lua.default" >"$dir/holdfast.lua"
reload() { kill -HUP "$pid"; sleep 0.5; }
reload
for round in $(seq "$rounds"); do
  pairs busy_poll daemon "$dir/holdfast.sock" 1 1
  pairs busy_poll setnx "$dir/redis.sock" 1 1
done
cp "$dir/holdfast.lua.default" "$dir/holdfast.lua"
reload
python3 - "$dir/pairs" >>"$results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split())
    runs.setdefault((f["C"], f["K"], f["mode"], f["via"]), []).append(f)
med = lambda rs, k: statistics.median(float(r[k]) for r in rs)
for c, k in [("1", "1"), ("1", "16"), ("1", "64"), ("64", "1"), ("16", "4")]:
    d, s, f = (runs.get((c, k, m, v), []) for m, v in
               (("daemon", "daemon"), ("setnx", "direct"), ("fcall", "direct")))
    if not (d and s and f):
        continue
    shape = "%sx%s" % (c, k)
    print("pairs_%s %.0f" % (shape, med(d, "pairs_per_s")))
    print("vs_setnx_%s %.2f" % (shape, med(d, "pairs_per_s") / med(s, "pairs_per_s")))
    print("vs_fcall_%s %.2f" % (shape, med(d, "pairs_per_s") / med(f, "pairs_per_s")))
    print("hold_p50_%s %.2f" % (shape, med(d, "hold_p50_us") / med(s, "hold_p50_us")))
    hs, hf = (runs.get((c, k, m, "hop"), []) for m in ("setnx", "fcall"))
    if hs and hf:
        # The same ratios for the forwarding hop: the floor for any daemon.
        print("hop_setnx_vs_setnx_%s %.2f" % (shape, med(hs, "pairs_per_s") / med(s, "pairs_per_s")))
        print("hop_fcall_vs_fcall_%s %.2f" % (shape, med(hf, "pairs_per_s") / med(f, "pairs_per_s")))
        print("hop_setnx_hold_p50_%s %.2f" % (shape, med(hs, "hold_p50_us") / med(s, "hold_p50_us")))
        print("daemon_vs_hop_fcall_%s %.2f" % (shape, med(d, "pairs_per_s") / med(hf, "pairs_per_s")))
        print("daemon_hold_p50_vs_hop_fcall_%s %.2f" % (shape, med(d, "hold_p50_us") / med(hf, "hold_p50_us")))
bd, bs = (runs.get(("1", "1", m, "busy_poll"), []) for m in ("daemon", "setnx"))
if bd and bs:
    print("busy_poll_hold_p50_1x1 %.2f" % (med(bd, "hold_p50_us") / med(bs, "hold_p50_us")))
    print("busy_poll_vs_setnx_1x1 %.2f" % (med(bd, "pairs_per_s") / med(bs, "pairs_per_s")))
PY

echo "== 2. confirm: holdfast.confirm() vs the minimal claim transaction (pgbench, ${seconds} s each)"
psql -h "$dir/pg" -U postgres -q holdfast -c "
  CREATE TABLE IF NOT EXISTS bench_idem (ns text, key text, request_hash bytea, code text,
    fence bigint, PRIMARY KEY (ns, key));
  CREATE TABLE IF NOT EXISTS bench_claims (ns text, partition text, resource text, fence bigint,
    reference text, idempotency_key text, PRIMARY KEY (ns, partition, resource));" >/dev/null
cat >"$dir/confirm.sql" <<'SQL'
\set n random(1, 4000000000000)
SELECT * FROM holdfast.confirm('seat', 'pgbench-' || :client_id, ARRAY['s' || :n], :n, 'pgbench-' || :n, 'bench', ''::bytea, 1000);
SQL
cat >"$dir/minimal.sql" <<'SQL'
\set n random(1, 4000000000000)
BEGIN;
INSERT INTO bench_idem VALUES ('seat', 'min-' || :n, '\x00', 'OK', :n) ON CONFLICT DO NOTHING;
INSERT INTO bench_claims VALUES ('seat', 'min-' || :client_id, 's' || :n, :n, 'bench', 'min-' || :n) ON CONFLICT DO NOTHING;
END;
SQL
tps() { # clients script
  "$PGBIN/pgbench" -h "$dir/pg" -U postgres -n -c "$1" -j 2 -T "$seconds" -M prepared \
    -f "$2" holdfast 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
for c in 1 4; do
  hf=$(tps "$c" "$dir/confirm.sql")
  mn=$(tps "$c" "$dir/minimal.sql")
  echo "c=$c holdfast.confirm() $hf tps, minimal claim transaction $mn tps"
  awk -v c="$c" -v hf="$hf" -v mn="$mn" 'BEGIN { printf "confirm_c%d %.2f\n", c, hf / mn }' >>"$results"
done
confirms=$((seconds * 2000))
# Two shapes: 4 clients each waiting for its confirm before the next hold
# (latency-bound: every step sleeps and wakes a process), and 4 connections
# with 16 hold+confirm chains in flight each (the daemon loaded, as pgbench
# loads PostgreSQL).
rate() { sed -n 's/.*= \([0-9]*\) confirms\/s.*/\1/p'; }
seq_via=$(build/bench/bench_hold --socket "$dir/holdfast.sock" --confirm --connections 4 --holds "$confirms")
echo "4 connections, 1 in flight: $seq_via"
via=$(build/bench/bench_hold --socket "$dir/holdfast.sock" --confirm --connections 4 --depth 16 \
  --holds "$((confirms * 2))")
echo "4 connections, 16 in flight: $via"
direct=$(tps 4 "$dir/confirm.sql")
echo "pgbench holdfast.confirm() at 4 clients: $direct tps"
awk -v seq="$(echo "$seq_via" | rate)" -v via="$(echo "$via" | rate)" -v direct="$direct" \
  'BEGIN { printf "hold_confirm %.2f\nhold_confirm_seq %.2f\n", via / direct, seq / direct }' >>"$results"

echo "== 3. pool holds and segment holds vs seat holds, through holdfastd"
holds=$((seconds * 20000))
build/bench/bench_hold --socket "$dir/holdfast.sock" --pools --holds "$holds" | tee "$dir/pools"
sed -n 's/^ratio pool hold\/seat hold = \([0-9.]*\).*/pool_vs_seat \1/p' "$dir/pools" >>"$results"
for legs in 1 4; do
  build/bench/bench_hold --socket "$dir/holdfast.sock" --segment "$legs" --holds "$holds" \
    | tee "$dir/segment"
  sed -n "s/^ratio segment hold\/seat hold = \([0-9.]*\).*/segment${legs}_vs_seat \1/p" \
    "$dir/segment" >>"$results"
done

echo "== 3. waiting in line: release -> the waiter's grant vs a plain hold's round trip"
build/bench/bench_hold --socket "$dir/holdfast.sock" --redis "$dir/redis.sock" --wakeup \
  --holds "$((seconds * 400))" | tee "$dir/wakeup"
sed -n 's/^ratio wake-up\/hold round trip: p50 \([0-9.]*\)  p99 \([0-9.]*\).*/wakeup_p50 \1\nwakeup_p99 \2/p' \
  "$dir/wakeup" >>"$results"

if [ "$clients" = 1 ]; then
  echo "== 5. clients against their peers"
  for lang in python go typescript java; do
    script="bench/clients/$lang/run.sh"
    [ -x "$script" ] || { echo "($script: not there)"; continue; }
    "$script" | tee "$dir/client-$lang"
    # Each script ends with "ratio_seq X" and "ratio_16 Y" lines.
    sed -n "s/^ratio_seq \([0-9.]*\)/${lang}_seq \1/p; s/^ratio_16 \([0-9.]*\)/${lang}_16 \1/p" \
      "$dir/client-$lang" >>"$results"
  done
fi

echo
echo "== goals (issue 15), measured in this run"
python3 - "$results" <<'PY'
import sys
r = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    r[k] = float(v)
goals = [
    ("1x1 hold p50 vs SET NX p50", "hold_p50_1x1", "<=", 1.3),
    ("  the same, loop.busy_poll_us = 50", "busy_poll_hold_p50_1x1", "<=", 1.3),
    ("1x64 pairs vs FCALL direct", "vs_fcall_1x64", ">=", 0.85),
    ("1x64 pairs vs SET NX + script", "vs_setnx_1x64", ">=", 0.5),
    ("64x1 pairs vs FCALL direct", "vs_fcall_64x1", ">=", 1.0),
    ("64x1 pairs vs SET NX + script", "vs_setnx_64x1", ">=", 0.8),
    ("confirm() vs minimal claim txn, 1 client", "confirm_c1", ">=", 0.5),
    ("confirm() vs minimal claim txn, 4 clients", "confirm_c4", ">=", 0.5),
    ("hold+confirm via holdfastd (4x16) vs pgbench", "hold_confirm", ">=", 0.8),
    ("idle RSS (MiB)", "idle_rss_mib", "<=", 16),
    ("RSS per idle connection (bytes)", "per_conn_bytes", "<=", 8192),
]
for lang, peer in (("python", "redis-py Lock"), ("go", "redsync"),
                   ("typescript", "node-redlock"), ("java", "Redisson")):
    goals.append(("%s client vs %s, sequential" % (lang, peer), lang + "_seq", ">=", 1.0))
    goals.append(("%s client vs %s, 16 in flight" % (lang, peer), lang + "_16", ">=", 2.0))
print("%-46s %10s %8s  %s" % ("goal", "measured", "target", "met"))
for name, key, op, target in goals:
    if key not in r:
        print("%-46s %10s %8s  %s" % (name, "-", op + " %g" % target, "not measured"))
        continue
    v = r[key]
    met = v <= target if op == "<=" else v >= target
    print("%-46s %10.2f %8s  %s" % (name, v, op + " %g" % target, "yes" if met else "no"))
print()
print("also: pairs/s through holdfastd:", ", ".join(
    "%s %.0f" % (k[6:], v) for k, v in r.items() if k.startswith("pairs_")))
for k in sorted(k for k in r if k.startswith(("hop_", "daemon_vs_hop", "daemon_hold_p50_vs_hop"))):
    print("floor: %s %.2f" % (k, r[k]))
for k in ("hold_confirm_seq", "pool_vs_seat", "segment1_vs_seat", "segment4_vs_seat", "wakeup_p50", "wakeup_p99"):
    if k in r:
        print("also: %s %.2f" % (k, r[k]))
PY
