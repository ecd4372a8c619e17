#!/usr/bin/env bash
# Benchmarks, each reported as a ratio against a baseline measured in the same
# run on the same private servers (tools/devstack.sh):
#   1. Hold + Confirm through holdfastd vs pgbench calling the same
#      holdfast.confirm() SQL function directly, same concurrency.
#   2. Hold through holdfastd vs the same Redis function called directly
#      (hiredis, same connections and pipeline depth).
#   3. A pool hold (1 unit of one pool) vs a seat hold, both through holdfastd.
#   4. A segment hold (one seat on 1 and on 4 legs) vs a seat hold, both
#      through holdfastd.
#   5. Waiting in line: release -> the waiter's grant (p50/p99) vs a plain
#      Hold's round trip, one round at a time on the same connections.
#   6. redis-benchmark SET with the same shape, for scale.
# Usage: bench/run.sh [holds] (default 200000; confirms are a tenth of it).
# Numbers depend on the machine; only the ratios travel.
set -euo pipefail
cd "$(dirname "$0")/.."
holds="${1:-200000}"
confirms=$((holds / 10))
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
tools/build.sh release >/dev/null
dir="$(mktemp -d /tmp/hf-bench.XXXXXX)"
trap 'tools/devstack.sh down "$dir" >/dev/null; rm -rf "$dir"' EXIT
# The dev stack logs at info: one line per request is part of the real cost.
tools/devstack.sh up "$dir" >/dev/null

echo "== hold + confirm through holdfastd (3 Redis calls + 1 PostgreSQL transaction each), 4 connections"
via=$(build/bench/bench_hold --socket "$dir/holdfast.sock" --confirm --connections 4 --holds "$confirms")
echo "$via"
echo "== pgbench: the same holdfast.confirm() called directly, 4 clients"
cat > "$dir/confirm.sql" <<'SQL'
\set n random(1, 4000000000000)
SELECT * FROM holdfast.confirm('seat', 'pgbench-' || :client_id, ARRAY['s' || :n], :n, 'pgbench-' || :n, 'bench', ''::bytea, 1000);
SQL
direct=$("$PGBIN/pgbench" -h "$dir/pg" -U postgres -n -c 4 -j 2 -t "$((confirms / 4))" \
  -f "$dir/confirm.sql" holdfast | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
echo "tps = $direct"
awk -v via="$(echo "$via" | sed -n 's/.*= \([0-9]*\) confirms\/s.*/\1/p')" -v direct="$direct" \
  'BEGIN { printf "ratio holdfastd confirms / direct SQL calls = %.2f\n", via / direct }'

echo "== holds through holdfastd vs direct hiredis FCALL"
build/bench/bench_hold --socket "$dir/holdfast.sock" --redis "$dir/redis.sock" --holds "$holds"
echo "== pool holds (units of one pool) vs seat holds, both through holdfastd"
build/bench/bench_hold --socket "$dir/holdfast.sock" --pools --holds "$holds"
echo "== segment holds (one seat on 1 leg, then on 4 legs) vs seat holds, both through holdfastd"
build/bench/bench_hold --socket "$dir/holdfast.sock" --segment 1 --holds "$holds"
build/bench/bench_hold --socket "$dir/holdfast.sock" --segment 4 --holds "$holds"
echo "== waiting in line: release -> waiter's grant vs a plain hold round trip"
build/bench/bench_hold --socket "$dir/holdfast.sock" --redis "$dir/redis.sock" --wakeup \
  --holds "$((holds / 100 > 500 ? holds / 100 : 500))"
echo "== redis-benchmark SET, same connections and pipeline depth"
redis-benchmark -s "$dir/redis.sock" -t set -n "$holds" -c 4 -P 32 --csv | tail -1
