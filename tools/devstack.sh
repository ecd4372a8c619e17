#!/usr/bin/env bash
# A private Redis (+ PostgreSQL, once migrations exist) and holdfastd in DIR.
#   tools/devstack.sh up DIR [--foreground]   start; prints HOLDFAST_SOCKET=...
#   tools/devstack.sh down DIR                stop everything started in DIR
# Everything listens on Unix sockets inside DIR; nothing touches the system's
# own Redis or PostgreSQL. HOLDFASTD selects the daemon binary.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOLDFASTD="${HOLDFASTD:-$ROOT/build/daemon/holdfastd}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 up|down DIR [--foreground]" >&2; exit 2; }
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

# PostgreSQL refuses to run as root: run it as the 'postgres' system user
# (created by Debian's package) when we are root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_wanted() { [ -d "$ROOT/daemon/sql/migrations" ] && "$HOLDFASTD" --help 2>&1 | grep -q -- --migrate; }

up() {
  [ -x "$HOLDFASTD" ] || { echo "devstack: $HOLDFASTD not built (tools/build.sh)" >&2; exit 1; }
  redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --dir "$dir" \
    --save '' --appendonly no --daemonize yes --pidfile "$dir/redis.pid" \
    --logfile "$dir/redis.log"
  for _ in $(seq 100); do [ -S "$dir/redis.sock" ] && break; sleep 0.05; done

  local pg_section="" pool_namespace=""
  if pg_wanted; then
    if [ ! -d "$dir/pg/data" ]; then
      mkdir -p "$dir/pg"
      [ "$(id -u)" = 0 ] && chown postgres "$dir/pg" && chmod 755 "$dir"
      as_pg "$PGBIN/initdb" -D "$dir/pg/data" -U postgres -A trust >/dev/null
    fi
    as_pg "$PGBIN/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/postgres.log" -w \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir/pg' -c fsync=off" start >/dev/null
    as_pg "$PGBIN/psql" -h "$dir/pg" -U postgres -qtAc \
      "SELECT 1 FROM pg_database WHERE datname='holdfast'" | grep -q 1 ||
      as_pg "$PGBIN/createdb" -h "$dir/pg" -U postgres holdfast
    "$HOLDFASTD" --migrate --dsn "host=$dir/pg dbname=holdfast user=postgres"
    pg_section="postgres = { dsn = \"host=$dir/pg dbname=holdfast user=postgres\", pool_size = 4 },"
    # Pools keep their capacity in PostgreSQL (docs/pools.md).
    pool_namespace='ga = { kind = "pools", default_ttl_ms = 60000, min_ttl_ms = 10,
             confirmable = true },'
  fi

  cat > "$dir/holdfast.lua" <<LUA
-- Written by tools/devstack.sh: a private stack for development and tests.
return {
  socket = { path = "$dir/holdfast.sock", mode = "0660" },
  redis = { address = "unix:$dir/redis.sock", pool_size = 2 },
  $pg_section
  limits = { default_timeout_ms = 2000 },
  log = { level = "info" },
  namespaces = {
    seat = { default_ttl_ms = 60000, min_ttl_ms = 10, max_ttl_ms = 600000,
             confirmable = true, confirm_window_ms = 30000 },
    ["product-modify"] = { default_ttl_ms = 5000, on_redis_down = "best_effort" },
    $pool_namespace
  },
}
LUA
  if [ "${3:-}" = "--foreground" ]; then
    echo "devstack: holdfastd in the foreground on $dir/holdfast.sock (Ctrl-C stops it)"
    "$HOLDFASTD" --config "$dir/holdfast.lua" || true
    return
  fi
  "$HOLDFASTD" --config "$dir/holdfast.lua" >>"$dir/holdfastd.log" 2>&1 &
  echo $! > "$dir/holdfastd.pid"
  for _ in $(seq 200); do
    "$(dirname "$HOLDFASTD")/holdfastctl" --socket "$dir/holdfast.sock" health >/dev/null 2>&1 && break
    sleep 0.05
  done
  echo "HOLDFAST_SOCKET=$dir/holdfast.sock"
}

down() {
  if [ -f "$dir/holdfastd.pid" ]; then
    pid="$(cat "$dir/holdfastd.pid")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -f "$dir/holdfastd.pid"
  fi
  if [ -f "$dir/pg/data/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null || true
  fi
  if [ -f "$dir/redis.pid" ]; then
    pid="$(cat "$dir/redis.pid")"
    kill -TERM "$pid" 2>/dev/null || true
    # Wait, so that callers may remove DIR once this returns.
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -f "$dir/redis.pid"
  fi
}

case "$cmd" in
  up) up "$@" ;;
  down) down ;;
  *) echo "usage: $0 up|down DIR [--foreground]" >&2; exit 2 ;;
esac
